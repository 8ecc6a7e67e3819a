import { ADVANTAGE_EPS } from './advantage.ts'
import { ConfigError } from './errors.ts'
import { meanJudgement } from './step-reward.ts'

/**
 * The reward model's own reward (RLAnything, arXiv 2602.02488, consistency feedback; DESIGN.md,
 * Algorithms): a judgement `S_l` of a step gets `(O + mean S) * S_l`, where O is the outcome of the
 * episode and `mean S` the mean of that step's parseable judgements; a judgement that cannot be
 * parsed gets a fixed penalty; the m rewards of one step are then z-scored across its judgements.
 */

/**
 * Default reward of an unparseable judgement: -3, below every parsed judgement's reward, which lies
 * in [-2, 2] when O is in [-1, 1], so emitting a verdict is always better than not.
 */
export const UNPARSEABLE_PENALTY = -3

/** Input of `computeConsistencyRewards`: one step and its m judgements. */
export interface ConsistencyInput {
  /** Outcome O of the episode the step belongs to. */
  outcome: number
  /** `[m]` judgements of the step: +1, -1, or 0 for unparseable. */
  judgements: ArrayLike<number>
  /** Reward of an unparseable judgement before the z-score; default `UNPARSEABLE_PENALTY`. */
  penalty?: number
  /** Added to the std before dividing; default `ADVANTAGE_EPS` (1e-6). */
  eps?: number
}

/** Result of `computeConsistencyRewards`. */
export interface ConsistencyRewards {
  /** `[m]` rewards before the z-score: `(O + mean S) * S_l`, or the penalty. */
  raw: Float64Array
  /** `[m]` rewards z-scored across the m judgements: the advantages of the verdict tokens. */
  advantages: Float64Array
}

/**
 * Consistency rewards of the m judgements of one step (RLAnything; DESIGN.md):
 * `r_l = (O + mean S) * S_l` for a parseable `S_l`, `r_l = penalty` otherwise; then
 * `A_l = (r_l - mean r) / (std r + eps)` with the unbiased (n - 1) std, as the GRPO group advantage.
 * `mean S` is over the parseable judgements only (0 when none parse).
 * Degenerate cases: m = 1, or all m rewards equal (zero std), give advantages of exactly 0.
 * @throws ConfigError on a non-finite outcome or penalty, or a judgement outside {-1, 0, +1}.
 */
export function computeConsistencyRewards(input: ConsistencyInput): ConsistencyRewards {
  const { outcome, judgements } = input
  const penalty = input.penalty ?? UNPARSEABLE_PENALTY
  const eps = input.eps ?? ADVANTAGE_EPS
  if (!Number.isFinite(outcome)) throw new ConfigError('outcome', outcome, 'must be finite')
  if (!Number.isFinite(penalty)) throw new ConfigError('penalty', penalty, 'must be finite')
  const meanS = meanJudgement(judgements)
  const m = judgements.length
  const raw = new Float64Array(m)
  for (let l = 0; l < m; l++) {
    const s = judgements[l]!
    raw[l] = s === 0 ? penalty : (outcome + meanS) * s // r_l = (O + mean S) * S_l
  }
  const advantages = new Float64Array(m)
  if (m < 2 || raw.every((v) => v === raw[0])) return { raw, advantages }
  const mean = raw.reduce((a, b) => a + b, 0) / m
  const std = Math.sqrt(raw.reduce((a, v) => a + (v - mean) ** 2, 0) / (m - 1)) // unbiased
  for (let l = 0; l < m; l++) advantages[l] = (raw[l]! - mean) / (std + eps) // A_l = (r_l - mean r) / (std r + eps)
  return { raw, advantages }
}
