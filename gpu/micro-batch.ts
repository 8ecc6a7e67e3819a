import * as tf from '@tensorflow/tfjs'
import type { MetricKey } from '../protocols/index.ts'
import { addGradients, globalNorm, lossAndGrads, nonFiniteGradients } from './gradients.ts'
import type { RlBatch } from './rl-batch.ts'
import type { Transformer } from './transformer.ts'

/**
 * Micro-batch gradient accumulation: a batch too large for one forward/backward pass is cut into
 * micro-batches; each one's loss is weighted by its share of the whole batch's loss, so the summed
 * gradients are those of the full-batch loss, and the optimizer steps once. Used by the policy's
 * RL step (`rlStep`) and the reward model's consistency step (`rewardModelStep`).
 */

/**
 * The optimizer an update drives: `AdamW` of `adamw.ts` (which clips the global gradient norm,
 * 1.0 by default as DemyAgent) fits.
 */
export interface RlOptimizer {
  /**
   * One update from gradients keyed by parameter name (`model.params` keys) at learning rate `lr`;
   * `gradNorm` is their global L2 norm where the caller has it.
   */
  step(
    grads: Readonly<Record<string, tf.Tensor>>,
    lr: number,
    gradNorm?: number,
  ): Promise<{ gradNorm: number; clipScale: number }>
}

/**
 * Records a scalar metric of a micro-batch's loss function (summed over micro-batches, weighted): a
 * scalar tensor (read after the backward pass) or a value already read.
 */
export type KeepMetric<K extends string = MetricKey> = (name: K, value: tf.Scalar | number) => void

/** What `GradientAccumulator.apply` did. */
export interface AppliedUpdate {
  /** Global L2 norm of the summed gradients before clipping (0 when there were none). */
  gradNorm: number
  /** True when no micro-batch gave gradients or the norm was not finite: the weights are unchanged. */
  skipped: boolean
}

/**
 * Sums the gradients of weighted micro-batch losses, then takes one optimizer step. Owns the
 * summed gradients: call `dispose` when done (also after a throw).
 */
export class GradientAccumulator<K extends string = MetricKey> {
  private readonly grads: Record<string, tf.Tensor> = {}
  private readonly sums = new Map<K, number>()
  /** Sum of the weighted micro-batch losses: the full batch's loss. */
  loss = 0

  constructor(private readonly model: Transformer) {}

  /**
   * One micro-batch: the gradient of `weight * lossFn()` with respect to the model's parameters is
   * added to the sum; each metric `lossFn` keeps is added as `weight * value`.
   * @param weight the micro-batch's share of the full batch's loss (its trained tokens over the
   *   batch's, for a token mean).
   */
  async add(weight: number, lossFn: (keep: KeepMetric<K>) => tf.Scalar): Promise<void> {
    const kept = new Map<K, tf.Scalar | number>()
    try {
      const result = await lossAndGrads(this.model, () => {
        const loss = lossFn((name, value) => {
          kept.set(name, typeof value === 'number' ? value : tf.keep(value))
        })
        return loss.mul(weight) as tf.Scalar
      })
      this.loss += result.loss
      addGradients(this.grads, result.grads)
      for (const [k, t] of kept) {
        const value = typeof t === 'number' ? t : (await t.data())[0]!
        this.sums.set(k, (this.sums.get(k) ?? 0) + value * weight)
      }
    } finally {
      tf.dispose([...kept.values()].filter((t) => typeof t !== 'number'))
    }
  }

  /** The kept metrics, each summed over the micro-batches with their weights. */
  metrics(): Map<K, number> {
    return new Map(this.sums)
  }

  /**
   * The global gradient norm `||g||_2`, then one `optimizer` step at `lr` unless there is no
   * gradient or the norm is not finite (a skipped update instead of corrupted weights).
   */
  async apply(optimizer: RlOptimizer, lr: number): Promise<AppliedUpdate> {
    const grads = Object.values(this.grads)
    if (grads.length === 0) return { gradNorm: 0, skipped: true }
    const gradNorm = await globalNorm(grads) // ||g||_2
    const skipped = !Number.isFinite(gradNorm)
    if (!skipped) await optimizer.step(this.grads, lr, gradNorm)
    return { gradNorm, skipped }
  }

  /**
   * Names of the summed gradients holding a NaN or an infinity (`nonFiniteGradients`: a read-back
   * per parameter, for the error after a non-finite norm).
   */
  nonFinite(): Promise<string[]> {
    return nonFiniteGradients(this.grads)
  }

  /** Frees the summed gradients. */
  dispose(): void {
    tf.dispose(Object.values(this.grads))
  }
}

/**
 * Row micro-batches of a batch: rows sorted by their length up to and including their last
 * trained token (at least 2 columns), packed greedily so that rows x length stays within
 * `maxTokens` (at least one row each). Each `length` is the longest row of its chunk.
 */
export function lengthBuckets(batch: RlBatch, maxTokens: number): { rows: number[]; length: number }[] {
  const lengths = Array.from({ length: batch.batch }, (_, i) => {
    let last = 0
    for (let t = batch.seqLen - 1; t > 0; t--)
      if (batch.lossMask[i * batch.seqLen + t] !== 0) {
        last = t
        break
      }
    return Math.min(batch.seqLen, Math.max(2, last + 1))
  })
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]! || a - b)
  const out: { rows: number[]; length: number }[] = []
  let current: number[] = []
  for (const r of order) {
    if (current.length && (current.length + 1) * lengths[r]! > maxTokens) {
      out.push({ rows: current, length: lengths[current[current.length - 1]!]! })
      current = []
    }
    current.push(r)
  }
  if (current.length) out.push({ rows: current, length: lengths[current[current.length - 1]!]! })
  return out
}
