import * as tf from '@tensorflow/tfjs'
import type { MetricValues } from '../protocols/index.ts'
import { ConfigError } from './errors.ts'
import { defineRegistry, lookupVariant } from './registry.ts'
import { assertMatrix, assertShape } from './shape.ts'

/**
 * Off-policy correction for stale tokens (docs/design.md#algorithms). Tokens reach the learner from
 * engines whose weights are up to `stalenessBound` versions old (and, with cross-policy sampling,
 * from stale engines), so the behavior policy that sampled a token is not the learner's policy. A
 * correction chooses what the PPO ratio is taken against (its anchor) and a per-token weight that
 * multiplies the token loss; every correction but `none` needs the proximal log-probabilities
 * `logp_prox`: those of the learner's weights at the start of the step (one extra forward pass,
 * no gradient). With `w = exp(logp_prox - logp_behavior)` (log-ratio clamped to [-20, 20]):
 * - `none`: anchor `logp_behavior`, weight 1 (no proximal pass);
 * - `decoupled` (AReaL, Fu et al., arXiv 2505.24298, eq. 5, decoupled PPO): anchor `logp_prox`, so
 *   the ratio `exp(logp_theta - logp_prox)` is clipped around the proximal policy; weight
 *   `min(w, cap)` per token (the cap of docs/design.md#algorithms; AReaL's code drops tokens
 *   above its cap instead);
 * - `tis` (truncated importance sampling, Yao et al. 2025, "Your efficient RL framework secretly
 *   brings you off-policy RL training"): anchor `logp_prox`; weight `min(w, cap)` per token, or per
 *   sequence `min(exp(sum_t m_t (logp_prox - logp_behavior)), cap)` broadcast to its tokens
 *   (`level`). At `level: 'token'` it gives the same loss as `decoupled` with the same cap;
 *   `level: 'sequence'` is its own;
 * - `icepop` (IcePop, Ling team, "Every Step Evolves: Scaling Reinforcement Learning for
 *   Trillion-Scale Thinking Model", the Ring-1T report): anchor `logp_prox`;
 *   tokens whose `w` leaves `[low, high]` get weight 0 (masked out of the gradient, still counted
 *   in the aggregation's denominator), the others weight 1.
 */

/** Names of the registered off-policy corrections. Closed set. */
export const OffPolicyName = { None: 'none', Decoupled: 'decoupled', Tis: 'tis', IcePop: 'icepop' } as const
export type OffPolicyName = (typeof OffPolicyName)[keyof typeof OffPolicyName]

/** Where the truncated importance weight of `tis` is taken. Closed set. */
export const OffPolicyLevel = { Token: 'token', Sequence: 'sequence' } as const
export type OffPolicyLevel = (typeof OffPolicyLevel)[keyof typeof OffPolicyLevel]

/** Settings of the off-policy correction. */
export interface OffPolicyConfig {
  /** Which correction (default `none`). */
  name: OffPolicyName
  /** Truncation `cap` of the importance weight of `decoupled` and `tis` (>= 1; default 2, as Yao et al.'s C). */
  cap: number
  /** Lower edge of IcePop's band (in (0, 1); default 0.5, the Ring-1T report's). */
  low: number
  /** Upper edge of IcePop's band (> 1; default 5, the Ring-1T report's). */
  high: number
  /** `tis` weight per `token` or per `sequence` (default `token`). */
  level: OffPolicyLevel
}

/** Defaults: no correction; cap 2, band [0.5, 5], token level for when one is chosen. */
export const OFF_POLICY_DEFAULTS: Readonly<OffPolicyConfig> = Object.freeze({
  name: OffPolicyName.None,
  cap: 2,
  low: 0.5,
  high: 5,
  level: OffPolicyLevel.Token,
})

/** Input of a correction; every tensor is `[batch, seqLen]` float32. */
export interface OffPolicyInput {
  /** log pi_behavior of each token, recorded by the engine that sampled it. */
  behaviorLogProbs: tf.Tensor2D
  /** log pi_prox: the learner's weights at the start of the step (no gradient). Needed unless `none`. */
  proxLogProbs?: tf.Tensor2D
  /** 1 for a trained token, else 0. */
  mask: tf.Tensor2D
}

/**
 * Sums of a correction's importance weights over the trained tokens of one (micro-)batch, float32
 * scalars the caller disposes; `offPolicyMetrics` turns totals over micro-batches into metrics.
 */
export type OffPolicyStats = {
  /** Trained tokens. */
  tokens: tf.Scalar
  /** Sum of the raw importance weights `w` (before the cap) over trained tokens. */
  weightSum: tf.Scalar
  /** Largest raw `w` over trained tokens (0 without any). */
  weightMax: tf.Scalar
  /** Trained tokens whose weight the cap lowered (`decoupled`, `tis`). */
  capped: tf.Scalar
  /** Trained tokens masked out (weight 0, `icepop`). */
  masked: tf.Scalar
}

/** What a correction gives the policy loss. */
export type OffPolicyResult = {
  /** `[batch, seqLen]` log-probabilities the PPO ratio is taken against. */
  anchorLogProbs: tf.Tensor2D
  /** `[batch, seqLen]` multipliers of the token loss (no gradient through them). */
  weights: tf.Tensor2D
  /** Statistics of the importance weights; absent for `none`. */
  stats?: OffPolicyStats
}

/** One registered correction. */
export interface OffPolicyCorrection {
  /** Whether it needs `proxLogProbs` (the extra forward pass with the step's starting weights). */
  needsProximal: boolean
  /**
   * @returns tensors the caller disposes.
   * @throws ConfigError when `proxLogProbs` is needed and missing, or the config is bad; ShapeError
   *   when the shapes differ.
   */
  apply(input: OffPolicyInput, config: OffPolicyConfig): OffPolicyResult
}

/**
 * Checks an off-policy config.
 * @throws ConfigError naming the field: `cap` < 1, `low` outside (0, 1), `high` <= 1, an unknown level.
 */
export function checkOffPolicyConfig(c: OffPolicyConfig): void {
  if (!(c.cap >= 1 && Number.isFinite(c.cap))) throw new ConfigError('offPolicy.cap', c.cap, 'must be >= 1')
  if (!(c.low > 0 && c.low < 1)) throw new ConfigError('offPolicy.low', c.low, 'must be in (0, 1)')
  if (!(c.high > 1 && Number.isFinite(c.high))) throw new ConfigError('offPolicy.high', c.high, 'must be > 1')
  if (c.level !== OffPolicyLevel.Token && c.level !== OffPolicyLevel.Sequence)
    throw new ConfigError('offPolicy.level', c.level, "must be 'token' or 'sequence'")
}

function prox(input: OffPolicyInput, name: string): tf.Tensor2D {
  const shape = assertMatrix('behaviorLogProbs', input.behaviorLogProbs)
  assertShape('mask', input.mask, shape)
  if (!input.proxLogProbs)
    throw new ConfigError(
      'proxLogProbs',
      undefined,
      `the '${name}' correction needs the proximal log-probabilities`,
    )
  assertShape('proxLogProbs', input.proxLogProbs, shape)
  return input.proxLogProbs
}

/** Masked log w = m * clamp(logp_prox - logp_behavior, -20, 20). */
function logWeights(input: OffPolicyInput, p: tf.Tensor2D): tf.Tensor2D {
  return p.sub(input.behaviorLogProbs).clipByValue(-20, 20).mul(input.mask) as tf.Tensor2D
}

function stats(w: tf.Tensor2D, m: tf.Tensor2D, capped: tf.Tensor2D, masked: tf.Tensor2D): OffPolicyStats {
  return {
    tokens: m.sum() as tf.Scalar,
    weightSum: w.mul(m).sum() as tf.Scalar,
    weightMax: w.mul(m).max() as tf.Scalar, // w > 0, so 0 stands for no trained token
    capped: capped.toFloat().mul(m).sum() as tf.Scalar,
    masked: masked.toFloat().mul(m).sum() as tf.Scalar,
  }
}

/**
 * `none`: the ratio against the behavior policy, no weight (GRPO-TCR as docs/design.md#algorithms
 * defines it).
 */
export const offPolicyNone: OffPolicyCorrection = {
  needsProximal: false,
  apply(input) {
    assertShape('mask', input.mask, assertMatrix('behaviorLogProbs', input.behaviorLogProbs))
    return { anchorLogProbs: input.behaviorLogProbs.clone(), weights: tf.onesLike(input.mask) as tf.Tensor2D }
  },
}

/** Token-level truncated weight `min(w, cap)` with the ratio around the proximal policy. */
function truncatedPerToken(input: OffPolicyInput, config: OffPolicyConfig, name: string): OffPolicyResult {
  checkOffPolicyConfig(config)
  const p = prox(input, name)
  return tf.tidy(() => {
    const w = logWeights(input, p).exp() as tf.Tensor2D // w = exp(logp_prox - logp_behavior)
    const weights = w.minimum(config.cap) as tf.Tensor2D // min(w, cap)
    const s = stats(w, input.mask, w.greater(config.cap) as tf.Tensor2D, tf.zerosLike(w) as tf.Tensor2D)
    return { anchorLogProbs: p.clone(), weights, stats: s }
  })
}

/**
 * `decoupled` (AReaL, arXiv 2505.24298, eq. 5): the ratio `exp(logp_theta - logp_prox)` is clipped
 * around the proximal policy and the token loss is multiplied by `min(exp(logp_prox - logp_behavior), cap)`.
 */
export const offPolicyDecoupled: OffPolicyCorrection = {
  needsProximal: true,
  apply: (input, config) => truncatedPerToken(input, config, OffPolicyName.Decoupled),
}

/**
 * `tis` (Yao et al. 2025, truncated importance sampling): weight `min(w, cap)` per token, or per
 * sequence `min(exp(sum_t m_t log w_t), cap)` on every token of the sequence; the ratio is taken
 * against the proximal policy. At sequence level the statistics count a sequence's weight once per
 * trained token.
 */
export const offPolicyTis: OffPolicyCorrection = {
  needsProximal: true,
  apply(input, config) {
    if (config.level !== OffPolicyLevel.Sequence) return truncatedPerToken(input, config, OffPolicyName.Tis)
    checkOffPolicyConfig(config)
    const p = prox(input, OffPolicyName.Tis)
    return tf.tidy(() => {
      const logSeq = logWeights(input, p).sum(1, true).clipByValue(-20, 20) // sum_t m_t log w_t, [batch, 1]
      const w = logSeq.exp().mul(tf.onesLike(input.mask)) as tf.Tensor2D // w_seq on every token
      const weights = w.minimum(config.cap) as tf.Tensor2D // min(w_seq, cap)
      const s = stats(w, input.mask, w.greater(config.cap) as tf.Tensor2D, tf.zerosLike(w) as tf.Tensor2D)
      return { anchorLogProbs: p.clone(), weights, stats: s }
    })
  },
}

/**
 * `icepop` (IcePop, the Ling team's Ring-1T report): tokens whose `w = exp(logp_prox - logp_behavior)`
 * lies outside `[low, high]` get weight 0, the others 1; the ratio is taken against the proximal policy.
 */
export const offPolicyIcePop: OffPolicyCorrection = {
  needsProximal: true,
  apply(input, config) {
    checkOffPolicyConfig(config)
    const p = prox(input, OffPolicyName.IcePop)
    return tf.tidy(() => {
      const w = logWeights(input, p).exp() as tf.Tensor2D
      const outside = w.less(config.low).logicalOr(w.greater(config.high)) as tf.Tensor2D
      const weights = tf.where(outside, tf.zerosLike(w), tf.onesLike(w)) as tf.Tensor2D // M(w) in {0, 1}
      const s = stats(w, input.mask, tf.zerosLike(w) as tf.Tensor2D, outside)
      return { anchorLogProbs: p.clone(), weights, stats: s }
    })
  },
}

/** Registered off-policy corrections, by name. */
export const OffPolicyCorrections = defineRegistry<OffPolicyCorrection>({
  none: offPolicyNone,
  decoupled: offPolicyDecoupled,
  tis: offPolicyTis,
  icepop: offPolicyIcePop,
})

/**
 * Looks an off-policy correction up by name.
 * @throws UnknownVariantError listing the valid names.
 */
export function getOffPolicyCorrection(name: string): OffPolicyCorrection {
  return lookupVariant('off-policy correction', OffPolicyCorrections, name)
}

/** `OffPolicyStats` summed over micro-batches, as plain numbers (`weightMax` the maximum). */
export interface OffPolicyTotals {
  tokens: number
  weightSum: number
  weightMax: number
  capped: number
  masked: number
}

/**
 * Metric keys of a correction (besides `none`, which reports none), over the trained tokens of the step:
 * - `off_policy/weight_mean`, `off_policy/weight_max`: mean and largest raw importance weight
 *   `exp(logp_prox - logp_behavior)` (per sequence for `tis` at sequence level), before cap or mask;
 * - `off_policy/capped_frac`: share of tokens whose weight the cap lowered (`decoupled`, `tis`);
 * - `off_policy/masked_frac`: share of tokens masked out (`icepop`).
 */
export function offPolicyMetrics(t: OffPolicyTotals): MetricValues {
  const n = Math.max(1, t.tokens)
  return {
    'off_policy/weight_mean': t.tokens ? t.weightSum / n : 0,
    'off_policy/weight_max': t.weightMax,
    'off_policy/capped_frac': t.capped / n,
    'off_policy/masked_frac': t.masked / n,
  }
}
