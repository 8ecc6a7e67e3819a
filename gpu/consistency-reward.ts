import { ADVANTAGE_EPS } from './advantage.ts'
import { ConfigError } from './errors.ts'
import { meanJudgement } from './step-reward.ts'

/**
 * The reward model's own reward (RLAnything, arXiv 2602.02488, consistency feedback;
 * docs/design.md#algorithms): a judgement `S_l` of a step gets `(O + mean S) * S_l`, where O is the
 * signed outcome of the episode in [-1, +1] (`signedOutcome`) and `mean S` the mean of that step's
 * parseable judgements; a judgement that cannot be parsed gets a fixed penalty; the m rewards of
 * one step are then z-scored across its judgements. The sign matters: with O in {0, 1} a failed
 * episode (O = 0) rewards only agreement with the majority, `mean S * S_l`, and carries no label
 * signal; with O = -1 it rewards the judgements that call its steps bad.
 */

/**
 * The signed outcome O of the consistency reward from a task reward r in [0, 1]: `O = 2r - 1`.
 * A binary success r in {0, 1} gives O in {-1, +1}; a graded outcome maps linearly, so half credit
 * (r = 0.5) is neutral (O = 0) and the sign of O says whether the episode did better than half.
 * @param reward the episode's task reward r (before any shaping), in [0, 1].
 * @returns O in [-1, 1].
 * @throws ConfigError when `reward` is not a finite number in [0, 1].
 */
export function signedOutcome(reward: number): number {
  if (!(Number.isFinite(reward) && reward >= 0 && reward <= 1))
    throw new ConfigError('outcome', reward, 'a task reward must be in [0, 1] (it enters as 2r - 1)')
  return 2 * reward - 1 // O = 2r - 1
}

/**
 * Default reward of an unparseable judgement: -3, below every parsed judgement's reward, which lies
 * in [-2, 2] when O is in [-1, 1], so emitting a verdict is always better than not.
 */
export const UNPARSEABLE_PENALTY = -3

/** Input of `computeConsistencyRewards`: one step and its m judgements. */
export interface ConsistencyInput {
  /** Signed outcome O in [-1, +1] of the episode the step belongs to (`signedOutcome` of its task reward). */
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
 * Consistency rewards of the m judgements of one step (RLAnything; docs/design.md#algorithms):
 * `r_l = (O + mean S) * S_l` for a parseable `S_l`, `r_l = penalty` otherwise; then
 * `A_l = (r_l - mean r) / (std r + eps)` with the unbiased (n - 1) std, as the GRPO group advantage.
 * `mean S` is over the parseable judgements only (0 when none parse).
 * Degenerate cases: m = 1, or all m rewards equal (zero std), give advantages of exactly 0.
 * @throws ConfigError on an outcome outside [-1, 1], a non-finite penalty, or a judgement outside {-1, 0, +1}.
 */
export function computeConsistencyRewards(input: ConsistencyInput): ConsistencyRewards {
  const { outcome, judgements } = input
  const penalty = input.penalty ?? UNPARSEABLE_PENALTY
  const eps = input.eps ?? ADVANTAGE_EPS
  if (!(Number.isFinite(outcome) && outcome >= -1 && outcome <= 1))
    throw new ConfigError('outcome', outcome, 'the signed outcome must be in [-1, 1] (signedOutcome)')
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
