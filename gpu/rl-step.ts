import * as tf from '@tensorflow/tfjs'
import type { MetricValues } from '../protocols/index.ts'
import type { AdvantageEstimatorName } from './advantage.ts'
import { getAggregator } from './aggregation.ts'
import { type BatchAdvantageConfig, computeBatchAdvantages, perTaskStats } from './batch-advantages.ts'
import { maskUniformGroups } from './dynamic-sampling.ts'
import { ConfigError, NonFiniteError, ShapeError } from './errors.ts'
import { nonFiniteGradientText, TRAINING_TODO } from './gradients.ts'
import { GRPO_TCR_DEFAULTS, type GrpoTcrConfig, PolicyMetric } from './grpo.ts'
import { getKlEstimator, type KlEstimatorName } from './kl.ts'
import { GradientAccumulator, lengthBuckets, type RlOptimizer } from './micro-batch.ts'
import {
  checkOffPolicyConfig,
  getOffPolicyCorrection,
  OFF_POLICY_DEFAULTS,
  type OffPolicyConfig,
  type OffPolicyResult,
  type OffPolicyTotals,
  offPolicyMetrics,
} from './off-policy.ts'
import { getPolicyLoss, PolicyLossName } from './policy-loss.ts'
import { checkBatch, type RlBatch } from './rl-batch.ts'
import { type Transformer, tokenStatsAt } from './transformer.ts'

/** Settings of one RL step: the advantage pipeline's (`BatchAdvantageConfig`) and the update's. */
export interface RlStepConfig extends BatchAdvantageConfig {
  /** Policy loss settings (clip range, dual clip, aggregation); DemyAgent GRPO-TCR defaults. */
  loss: GrpoTcrConfig
  /** KL-to-reference coefficient beta; 0 turns it off (the default, as DemyAgent). Needs a reference model. */
  beta: number
  /** KL estimator for the reference term (`k3` by default). */
  klEstimator: KlEstimatorName
  /** Entropy bonus coefficient: the loss subtracts `entropyCoef * entropy`; default 0. */
  entropyCoef: number
  /** Sampling temperature the behavior log-probabilities were taken at; logits are divided by it. */
  temperature: number
  /**
   * Most padded tokens (rows x seqLen) per forward/backward pass; a larger batch is split into
   * micro-batches whose gradients are summed before the one optimizer step (gradient
   * accumulation). Bounds activation memory: the wasm backend has 4 GiB and a training pass holds
   * about 1.4 MB per token at width 128. Default 4096.
   */
  microBatchTokens?: number
  /**
   * Dynamic sampling (DAPO): mask out groups whose samples all got the same shaped reward (their
   * advantages are all 0) before the step, so they neither cost a pass nor dilute the token mean
   * (`maskUniformGroups`). Default off: the loss then averages over every trained token of the
   * batch, as GRPO-TCR defines it.
   */
  dynamicSampling?: boolean
  /**
   * Off-policy correction for stale tokens (`gpu/off-policy.ts`: `none`, `decoupled`, `tis`,
   * `icepop`); absent means `none` (the ratio against the behavior log-probabilities). Every
   * correction but `none` costs one more forward pass per micro-batch (no gradient), with the
   * weights the step starts from: the proximal policy.
   */
  offPolicy?: OffPolicyConfig
}

/**
 * DemyAgent GRPO-TCR defaults: token-mean, eps 0.2 / 0.28, c 10, no KL, entropy 0, grad clip 1.0;
 * AgentRL task normalization on. Its `advantage` is a registered estimator (the recipe schema's
 * default, `recipes/recipe-schema.ts`).
 */
export const RL_STEP_DEFAULTS: Readonly<RlStepConfig & { advantage: AdvantageEstimatorName }> = Object.freeze(
  {
    loss: GRPO_TCR_DEFAULTS,
    advantage: 'grpo',
    taskAdvantageNorm: true,
    beta: 0,
    klEstimator: 'k3',
    entropyCoef: 0,
    temperature: 1,
  },
)

/** What an RL step updates and reads. */
export interface RlStepState {
  /** The policy being trained. */
  model: Transformer
  /** Updates `model`'s parameters (and clips the gradient norm). */
  optimizer: RlOptimizer
  /** Learning rate of this step. */
  lr: number
  /** Frozen reference policy for the KL term (needed when `beta > 0`). */
  reference?: Transformer
  /** The learner's weight version before this step (staleness = version - token's weightVersion). */
  version: number
  /** Clock in ms, injected for tests; default `performance.now`. */
  now?: () => number
}

/**
 * Metric keys of one RL step (besides the `policy/*` keys of `PolicyMetric`):
 * - `loss/total`: the minimised loss (policy + beta KL - entropyCoef entropy);
 * - `actor/entropy`: mean entropy (nats) of the policy over trained tokens;
 * - `actor/kl_ref`: mean KL estimate to the reference (only with a reference model);
 * - `optim/grad_norm`: global gradient norm before clipping; `optim/skipped`: 1 when no token
 *   was trained (no update; a non-finite norm throws instead); `optim/lr`: the learning rate;
 * - `adv/mean/<task>`, `adv/std/<task>`: final advantages over the task's trained tokens;
 * - `reward/mean/<task>`: mean outcome reward (before shaping); `reward/mean`: over the batch;
 *   `reward/overlong_penalty`: mean shaping penalty (with `overlong`);
 * - `staleness/mean`, `staleness/max`: learner version minus the token's weight version, over trained tokens;
 * - `batch/trajectories`, `batch/trained_tokens`; with `dynamicSampling`, `batch/uniform_groups` and
 *   `batch/uniform_trajectories` masked out (their tokens are not in `batch/trained_tokens`, their
 *   penalties count as 0 in `reward/overlong_penalty`);
 * - `perf/step_ms`, `perf/tokens_per_s`: trained tokens per second of the whole step;
 * - with an off-policy correction other than `none`: `off_policy/weight_mean`,
 *   `off_policy/weight_max`, `off_policy/capped_frac`, `off_policy/masked_frac`
 *   (`offPolicyMetrics`, over the trained tokens of the batch); the ratio metrics of `policy/*`
 *   (`policy/ratio_mean`, the clip fractions, `policy/approx_kl`) are then against the proximal policy.
 */
export type RlStepMetrics = MetricValues

function checkConfig(c: RlStepConfig, state: RlStepState): void {
  if (!(c.temperature > 0)) throw new ConfigError('temperature', c.temperature, 'must be > 0')
  if (!(c.beta >= 0)) throw new ConfigError('beta', c.beta, 'must be >= 0')
  if (c.beta > 0 && !state.reference) throw new ConfigError('beta', c.beta, 'needs a reference model')
  if (!Number.isFinite(c.entropyCoef)) throw new ConfigError('entropyCoef', c.entropyCoef, 'must be finite')
  if (c.offPolicy) {
    getOffPolicyCorrection(c.offPolicy.name)
    checkOffPolicyConfig(c.offPolicy)
  }
}

/**
 * Per-token log-probabilities `[batch, seqLen]` (column 0 is 0) and entropies of `tokens` under
 * `model`, at the positions where `mask` `[batch, seqLen]` is not 0 (0 elsewhere: every use of
 * them is masked). The output head and softmax run on those positions alone (`tokenStatsAt`): a
 * response is a small part of an agentic trajectory, and a pretrained vocabulary makes the head the
 * bulk of a pass. `entropyGradient`: the entropy takes a gradient (a step with an entropy bonus);
 * without it, it is a value alone (`tokenStatsAt`).
 */
function tokenStats(
  model: Transformer,
  tokens: tf.Tensor2D,
  temperature: number,
  mask: tf.Tensor2D,
  entropyGradient = false,
): { logp: tf.Tensor2D; entropy: tf.Tensor2D } {
  const [b, t] = tokens.shape
  const inputs = tokens.slice([0, 0], [b, t - 1])
  const targets = tokens.slice([0, 1], [b, t - 1])
  // Column j of the output predicts tokens[:, j] from position j - 1 of the inputs.
  const m = mask.dataSync()
  const positions: number[] = []
  for (let r = 0; r < b; r++)
    for (let j = 1; j < t; j++) if (m[r * t + j] !== 0) positions.push(r * (t - 1) + j - 1)
  const stats = tokenStatsAt(model, inputs, targets, Int32Array.from(positions), {
    temperature,
    entropy: true,
    entropyGradient,
  })
  const pad = tf.zeros([b, 1])
  return {
    logp: tf.concat([pad, stats.logp], 1) as tf.Tensor2D,
    entropy: tf.concat([pad, stats.entropy!], 1) as tf.Tensor2D,
  }
}

/**
 * One GRPO-TCR update (DemyAgent arXiv 2510.11701; task normalization AgentRL arXiv 2510.04206):
 * advantages from `computeBatchAdvantages`, `logp_theta` recomputed by `model` (teacher forcing),
 * the policy loss `grpo-tcr` of the registry `PolicyLosses` (`computePolicyLossGrpoTcr`) against the recorded behavior log-probabilities,
 * `+ beta * KL(pi_theta || pi_ref)` (aggregated like the loss) and `- entropyCoef * entropy`,
 * then one optimizer step (AdamW clips the global gradient norm). A non-finite loss or gradient
 * norm stops the step before the update (the weights stay as they were).
 * @returns the step's metrics (see `RlStepMetrics`).
 * @throws ShapeError / ConfigError on a bad batch or config (before any update); NonFiniteError for
 *   a NaN or infinite loss or gradient norm (naming the step, and for the norm the first parameter
 *   whose gradient is not finite; nothing updated).
 */
export async function rlStep(
  state: RlStepState,
  input: RlBatch,
  config: RlStepConfig = RL_STEP_DEFAULTS,
): Promise<RlStepMetrics> {
  checkBatch(input)
  checkConfig(config, state)
  const sampled = config.dynamicSampling ? maskUniformGroups(input, config.overlong) : undefined
  const batch = sampled?.batch ?? input
  if (batch.seqLen > state.model.config.contextLength + 1) {
    const most = state.model.config.contextLength + 1
    throw new ShapeError('tokens', `at most ${most} positions`, [batch.batch, batch.seqLen])
  }
  const now = state.now ?? (() => performance.now())
  const start = now()
  // The config carries the loss's settings, not a choice of loss: GRPO-TCR, looked up in the registry.
  const policyLoss = getPolicyLoss(PolicyLossName.GrpoTcr)
  const aggregate = getAggregator(config.loss.aggregation)
  const kl = getKlEstimator(config.klEstimator)
  const offPolicy = config.offPolicy ?? OFF_POLICY_DEFAULTS
  const correction = getOffPolicyCorrection(offPolicy.name)
  const offTotals: OffPolicyTotals = { tokens: 0, weightSum: 0, weightMax: 0, capped: 0, masked: 0 }
  const { advantages, penalty } = computeBatchAdvantages(batch, config)
  const shape: [number, number] = [batch.batch, batch.seqLen]
  const tokens = tf.tensor2d(batch.tokens, shape, 'int32')
  const mask = tf.tensor2d(batch.lossMask, shape)
  const behavior = tf.tensor2d(batch.behaviorLogprobs, shape)
  const accumulator = new GradientAccumulator(state.model) // metric sums over micro-batches, each weighted by its share
  const metrics: RlStepMetrics = {}
  try {
    // Gradient accumulation over row micro-batches. Each micro-batch's loss is weighted by its
    // share of the full batch's aggregation (trained tokens for token-mean, sequences with a
    // trained token otherwise), so
    // the summed gradients are those of the full-batch loss. Rows are bucketed by length (up to
    // their last trained token) and each micro-batch is cut to its longest row: the columns after
    // a row's last trained token change neither its loss nor, under causal attention, anything
    // before them.
    const tokenMean = config.loss.aggregation === 'token-mean'
    const maskTotal = batch.lossMask.reduce((a, m) => a + m, 0)
    const trainedRows = (rows: Iterable<number>) => {
      let n = 0
      for (const r of rows)
        if (batch.lossMask.subarray(r * batch.seqLen, (r + 1) * batch.seqLen).some((m) => m !== 0)) n++
      return n
    }
    const rowsTotal = trainedRows(Array.from({ length: batch.batch }, (_, i) => i))
    for (const chunk of lengthBuckets(batch, config.microBatchTokens ?? 4096)) {
      const rows = chunk.rows.length
      let maskRows = 0
      for (const r of chunk.rows)
        for (let t = 0; t < chunk.length; t++) maskRows += batch.lossMask[r * batch.seqLen + t]!
      if (maskRows === 0) continue // nothing trained here: no loss, no gradient
      // Share of the whole batch's aggregation: its trained tokens (token-mean) or its sequences
      // with a trained token (the sequence means average over those only).
      const weight = tokenMean
        ? maskRows / Math.max(1, maskTotal)
        : trainedRows(chunk.rows) / Math.max(1, rowsTotal)
      const index = tf.tensor1d(chunk.rows, 'int32')
      const part = (t: tf.Tensor2D) =>
        tf.tidy(() => tf.gather(t, index).slice([0, 0], [rows, chunk.length]) as tf.Tensor2D)
      const mbTokens = part(tokens)
      const mbMask = part(mask)
      const mbBehavior = part(behavior)
      const mbAdvantages = part(advantages as tf.Tensor2D)
      // The reference's log-probabilities of this micro-batch (no gradient through them).
      const mbRef =
        config.beta > 0 && state.reference
          ? tf.tidy(() => tokenStats(state.reference!, mbTokens, config.temperature, mbMask).logp)
          : undefined
      // The proximal log-probabilities: the weights this step starts from (the optimizer steps only
      // after every micro-batch), one forward pass without gradient, only when the correction needs it.
      const mbProx = correction.needsProximal
        ? tf.tidy(() => tokenStats(state.model, mbTokens, config.temperature, mbMask).logp)
        : undefined
      index.dispose()
      let corrected: OffPolicyResult | undefined
      try {
        corrected = correction.apply(
          { behaviorLogProbs: mbBehavior, ...(mbProx ? { proxLogProbs: mbProx } : {}), mask: mbMask },
          offPolicy,
        )
        const { anchorLogProbs, weights: tokenWeights } = corrected
        await accumulator.add(weight, (keep) => {
          const bonus = config.entropyCoef !== 0
          const { logp, entropy } = tokenStats(state.model, mbTokens, config.temperature, mbMask, bonus)
          const { loss, metrics: policy } = policyLoss(
            {
              logProbs: logp,
              behaviorLogProbs: anchorLogProbs,
              advantages: mbAdvantages,
              mask: mbMask,
              weights: tokenWeights,
            },
            config.loss,
          )
          const meanEntropy = aggregate(entropy, mbMask)
          // L - entropyCoef * H; without a bonus the entropy is a metric alone, off the backward pass
          let total = bonus ? loss.sub(meanEntropy.mul(config.entropyCoef)) : loss
          for (const k of Object.values(PolicyMetric)) keep(k, policy[k])
          keep('actor/entropy', meanEntropy)
          if (mbRef) {
            const klRef = aggregate(kl(logp, mbRef), mbMask)
            total = total.add(klRef.mul(config.beta)) // L + beta * KL(pi_theta || pi_ref)
            keep('actor/kl_ref', klRef)
          }
          return total as tf.Scalar
        })
        const st = corrected.stats
        if (st) {
          const read = async (t: tf.Scalar) => (await t.data())[0]!
          offTotals.tokens += await read(st.tokens)
          offTotals.weightSum += await read(st.weightSum)
          offTotals.weightMax = Math.max(offTotals.weightMax, await read(st.weightMax))
          offTotals.capped += await read(st.capped)
          offTotals.masked += await read(st.masked)
        }
      } finally {
        tf.dispose([mbTokens, mbMask, mbBehavior, mbAdvantages])
        if (corrected)
          tf.dispose([corrected.anchorLogProbs, corrected.weights, ...Object.values(corrected.stats ?? {})])
        mbRef?.dispose()
        mbProx?.dispose()
      }
    }
    metrics['loss/total'] = accumulator.loss
    const step = state.version + 1
    if (!Number.isFinite(accumulator.loss))
      throw new NonFiniteError(
        'loss',
        `RL step ${step} (from weight version ${state.version})`,
        step,
        accumulator.loss,
        TRAINING_TODO,
      )
    // No trained token in the whole batch (every pass skipped): nothing to update.
    const { gradNorm, skipped } = await accumulator.apply(state.optimizer, state.lr)
    if (!Number.isFinite(gradNorm)) {
      const where = nonFiniteGradientText(await accumulator.nonFinite())
      throw new NonFiniteError(
        'gradient norm',
        `RL step ${step} (from weight version ${state.version})${where}`,
        step,
        gradNorm,
        TRAINING_TODO,
      )
    }
    metrics['optim/grad_norm'] = gradNorm
    metrics['optim/skipped'] = skipped ? 1 : 0
    metrics['optim/lr'] = state.lr
    for (const [k, v] of accumulator.metrics()) metrics[k] = v
    if (correction.needsProximal) Object.assign(metrics, offPolicyMetrics(offTotals))
    Object.assign(metrics, perTaskStats((await advantages.data()) as Float32Array, batch.lossMask, batch))
  } finally {
    accumulator.dispose()
    tf.dispose([advantages, tokens, mask, behavior])
  }
  Object.assign(metrics, batchStats(batch, state.version))
  if (sampled) {
    metrics['batch/uniform_groups'] = sampled.droppedGroups
    metrics['batch/uniform_trajectories'] = sampled.droppedTrajectories
  }
  if (config.overlong) metrics['reward/overlong_penalty'] = penalty.reduce((s, p) => s + p, 0) / batch.batch
  const elapsed = now() - start
  metrics['perf/step_ms'] = elapsed
  metrics['perf/tokens_per_s'] = elapsed > 0 ? (metrics['batch/trained_tokens']! / elapsed) * 1000 : 0
  return metrics
}

/** Reward per task, staleness and sizes of a batch (plain numbers, no tensors). */
function batchStats(batch: RlBatch, version: number): RlStepMetrics {
  const metrics: RlStepMetrics = {}
  const rewardSums = new Map<string, { n: number; s: number }>()
  batch.tasks.forEach((task, i) => {
    const acc = rewardSums.get(task) ?? { n: 0, s: 0 }
    acc.n++
    acc.s += batch.rewards[i]!
    rewardSums.set(task, acc)
  })
  for (const [task, { n, s }] of rewardSums) metrics[`reward/mean/${task}`] = s / n
  metrics['reward/mean'] = batch.rewards.reduce((s, r) => s + r, 0) / batch.batch
  let trained = 0
  let staleSum = 0
  let staleMax = 0
  batch.lossMask.forEach((m, k) => {
    if (m === 0) return
    const stale = version - batch.weightVersions[k]! // learner version - behavior version
    trained++
    staleSum += stale
    staleMax = Math.max(staleMax, stale)
  })
  metrics['staleness/mean'] = trained ? staleSum / trained : 0
  metrics['staleness/max'] = staleMax
  metrics['batch/trajectories'] = batch.batch
  metrics['batch/trained_tokens'] = trained
  return metrics
}
