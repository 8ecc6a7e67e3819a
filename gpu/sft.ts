import * as tf from '@tensorflow/tfjs'
import type { AdamW } from './adamw.ts'
import type { RenderedChat } from './chat-template.ts'
import { ConfigError, NonFiniteError, ShapeError } from './errors.ts'
import { lossAndGrads, nonFiniteGradients, nonFiniteGradientText, TRAINING_TODO } from './gradients.ts'
import type { LrSchedule } from './lr-schedule.ts'
import { createRng, shuffle } from './prng.ts'
import { makeBatches, type SftBatch } from './sft-batch.ts'
import { sftLoss } from './sft-loss.ts'
import type { SftWorkers } from './sft-workers.ts'
import type { Transformer } from './transformer.ts'
import { getWeights } from './weights.ts'

/**
 * Supervised fine-tuning (the cold start of DemyAgent): cross-entropy on the loss-masked tokens of
 * rendered chat trajectories, with length-bucketed batches.
 */

/** One logged SFT step (a line of the loss curve, JSONL-ready). */
export interface SftLogRecord {
  /** Optimizer step, from 1. */
  step: number
  /** Epoch, from 0. */
  epoch: number
  /** Masked token-mean cross-entropy (nats per token) of the batch, before the update. */
  loss: number
  /** Learning rate used. */
  lr: number
  /** Global gradient norm before clipping. */
  gradNorm: number
  /** Loss-masked tokens in the batch. */
  lossTokens: number
  /** Padded input tokens in the batch (`batch * seqLen`). */
  tokens: number
  /** Wall time of the step, ms (from the injected clock). */
  ms: number
}

/**
 * One SFT step: loss, gradients, an AdamW update at `lr`. With `workers`, the step is data-parallel
 * over `batches[0]` (this thread) and `batches[1..]` (worker thread `i - 1` each, at the current
 * weights): the gradient is the loss-token-weighted mean of the batches' gradients,
 * `g = sum_i (n_i / N) g_i` with `n_i` the batch's loss tokens and `N = sum_i n_i`, which is the
 * gradient of the token-mean loss over all of them (the same step as one batch holding them all).
 * @param batches one batch, or one per thread (this one first; at most `1 + workers.size`).
 * @returns the step's log record (with `epoch` 0; `trainSft` fills it in); `loss` and `lossTokens` over all batches.
 * @throws ConfigError when there are more batches than threads; SftWorkerError when a worker fails;
 *   NonFiniteError, before the update, for a NaN or infinite loss or gradient norm (naming the step,
 *   and for the norm the first parameter whose gradient is not finite).
 */
export async function sftStep(
  model: Transformer,
  optimizer: AdamW,
  batches: SftBatch | readonly SftBatch[],
  lr: number,
  now: () => number = () => performance.now(),
  workers?: SftWorkers,
): Promise<SftLogRecord> {
  const start = now()
  const parts = Array.isArray(batches) ? (batches as readonly SftBatch[]) : [batches as SftBatch]
  if (parts.length < 1 || parts.length > 1 + (workers?.size ?? 0))
    throw new ConfigError('batches', parts.length, `must be 1 to ${1 + (workers?.size ?? 0)} (threads)`)
  const remote = parts.slice(1)
  const weights = remote.length ? await getWeights(model) : undefined
  const pending = remote.map((b, i) => workers!.compute(i, b, weights))
  const lossTokens = parts.reduce((n, b) => n + b.lossTokens, 0)
  let grads: Record<string, tf.Tensor> | undefined
  try {
    // Inside the try: when this thread's pass fails, the workers' replies are still awaited below.
    const local = await lossAndGrads(model, () => sftLoss(model, parts[0]!))
    grads = local.grads
    let loss = local.loss
    if (remote.length) {
      const results = await Promise.all(pending)
      const total = Math.max(1, lossTokens)
      loss = (local.loss * parts[0]!.lossTokens) / total
      results.forEach((r, i) => {
        loss += (r.loss * parts[i + 1]!.lossTokens) / total
      })
      const combined = tf.tidy(() => {
        const out: Record<string, tf.Tensor> = {}
        for (const [name, g] of Object.entries(local.grads)) {
          let sum = tf.mul(g, parts[0]!.lossTokens / total) // sum_i (n_i / N) g_i
          results.forEach((r, i) => {
            const data = r.grads[name]
            if (!data) throw new ShapeError(`worker grads.${name}`, `[${g.shape}]`, [0])
            sum = tf.add(sum, tf.mul(tf.tensor(data, g.shape, 'float32'), parts[i + 1]!.lossTokens / total))
          })
          out[name] = sum
        }
        return out
      })
      tf.dispose(local.grads)
      grads = combined
    }
    const step = optimizer.stepCount + 1
    if (!Number.isFinite(loss))
      throw new NonFiniteError('loss', `SFT step ${step}`, step, loss, TRAINING_TODO)
    let info: Awaited<ReturnType<AdamW['step']>>
    try {
      info = await optimizer.step(grads, lr)
    } catch (err) {
      // AdamW refuses a non-finite norm before it updates anything
      if (!(err instanceof ConfigError && err.field === 'grads')) throw err
      const where = nonFiniteGradientText(await nonFiniteGradients(grads))
      throw new NonFiniteError(
        'gradient norm',
        `SFT step ${step}${where}`,
        step,
        Number(err.value),
        TRAINING_TODO,
        {
          cause: err,
        },
      )
    }
    return {
      step: info.step,
      epoch: 0,
      loss,
      lr,
      gradNorm: info.gradNorm,
      lossTokens,
      tokens: parts.reduce((n, b) => n + b.batch * b.seqLen, 0),
      ms: now() - start,
    }
  } finally {
    if (grads) tf.dispose(grads)
    await Promise.allSettled(pending)
  }
}

/** Settings of `trainSft`. */
export interface SftConfig {
  /** Passes over the data; default 1. */
  epochs?: number
  /** Most padded input tokens per batch; default 4096. */
  batchTokens?: number
  /** Most sequences per batch; default unlimited. */
  maxBatchSize?: number
  /** Learning rate per step (see `warmupCosine`); or `scheduleFor`. */
  schedule?: LrSchedule
  /**
   * Makes the schedule from the number of optimizer steps the training takes (`(total) =>
   * warmupCosine({..., totalSteps: total})`), so that its length is the count `trainSft` itself
   * trains, never a second computation of it; takes the place of `schedule`.
   */
  scheduleFor?: (totalSteps: number) => LrSchedule
  /** Seed of the batch order; default 0. */
  seed?: number
  /** Stop after this many steps; default all. */
  maxSteps?: number
  /** Id used for padding; default 0 (masked out, any id works). */
  padId?: number
  /**
   * Worker threads for data-parallel steps (`SftWorkers`): each step then takes `1 + workers.size`
   * batches (one per thread), so an epoch has that many times fewer steps. Default none.
   */
  workers?: SftWorkers
  /**
   * Called with every step's record (write it as a JSONL line) and the number of steps the training
   * takes: how progress is reported (progress bars are drawn in `bin/`, never here).
   */
  onLog?: (record: SftLogRecord, total: number) => void
  /** Clock in ms; default `performance.now`. */
  now?: () => number
}

/** Number of optimizer steps `trainSft` takes for these examples and settings (for a schedule). */
export function sftStepCount(
  examples: readonly RenderedChat[],
  model: Transformer,
  config: Omit<SftConfig, 'schedule' | 'scheduleFor'>,
): number {
  const batches = makeBatches(examples, {
    batchTokens: config.batchTokens ?? 4096,
    contextLength: model.config.contextLength,
    padId: config.padId ?? 0,
    maxBatchSize: config.maxBatchSize,
  })
  const perStep = 1 + (config.workers?.size ?? 0)
  return Math.min(
    Math.ceil(batches.length / perStep) * (config.epochs ?? 1),
    config.maxSteps ?? Number.POSITIVE_INFINITY,
  )
}

/**
 * Trains on rendered trajectories: each epoch shuffles the length buckets (seeded) and takes one
 * AdamW step per batch.
 * @returns the loss curve, one record per step.
 */
export async function trainSft(
  model: Transformer,
  optimizer: AdamW,
  examples: readonly RenderedChat[],
  config: SftConfig,
): Promise<SftLogRecord[]> {
  const epochs = config.epochs ?? 1
  if (!Number.isInteger(epochs) || epochs < 1)
    throw new ConfigError('epochs', epochs, 'must be a positive integer')
  const batches = makeBatches(examples, {
    batchTokens: config.batchTokens ?? 4096,
    contextLength: model.config.contextLength,
    padId: config.padId ?? 0,
    maxBatchSize: config.maxBatchSize,
  })
  const perStep = 1 + (config.workers?.size ?? 0)
  const total = Math.min(
    Math.ceil(batches.length / perStep) * epochs,
    config.maxSteps ?? Number.POSITIVE_INFINITY,
  )
  const schedule = config.scheduleFor?.(total) ?? config.schedule
  if (!schedule) throw new ConfigError('schedule', undefined, 'give schedule or scheduleFor')
  const rng = createRng(config.seed ?? 0)
  const records: SftLogRecord[] = []
  for (let epoch = 0; epoch < epochs && records.length < total; epoch++) {
    const order = shuffle([...batches], rng)
    for (let i = 0; i < order.length; i += perStep) {
      if (records.length >= total) break
      const record = await sftStep(
        model,
        optimizer,
        order.slice(i, i + perStep),
        schedule(optimizer.stepCount),
        config.now,
        config.workers,
      )
      record.epoch = epoch
      records.push(record)
      config.onLog?.(record, total)
    }
  }
  return records
}
