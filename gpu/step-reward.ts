import { ADVANTAGE_EPS } from './advantage.ts'
import { ConfigError, ShapeError } from './errors.ts'

/**
 * RLAnything's integrated policy reward (arXiv 2602.02488, "dynamic triad";
 * docs/design.md#algorithms): each assistant step j of a trajectory gets
 * `R_j = O + lambda * mean_l S_jl` from the outcome O and the m reward-model judgements `S_jl` of
 * that step; the rewards are z-scored per step index across the rollouts of one task instance (the
 * G samples of a group, as GRPO) and become the token-level advantages of the step's tokens.
 */

/** The value of one reward-model judgement. Closed set. */
export const Verdict = {
  /** The step helps solve the task: `S = +1`. */
  Good: 1,
  /** The step does not help: `S = -1`. */
  Bad: -1,
  /** The reward model's output could not be read as a verdict (no `S`; penalised in its own reward). */
  Unparseable: 0,
} as const
export type Verdict = (typeof Verdict)[keyof typeof Verdict]

function checkVerdicts(name: string, s: ArrayLike<number>): void {
  for (let l = 0; l < s.length; l++) {
    const v = s[l]
    if (v !== 1 && v !== -1 && v !== 0)
      throw new ConfigError(`${name}[${l}]`, v, 'a judgement must be +1, -1 or 0 (unparseable)')
  }
}

/**
 * Mean of the parseable judgements of one step, `mean_l S_l` over `S_l` in {-1, +1}; 0 when no
 * judgement is parseable (or there are none).
 * @param judgements `[m]`: +1, -1, or 0 for unparseable.
 * @throws ConfigError on a value outside {-1, 0, +1}.
 */
export function meanJudgement(judgements: ArrayLike<number>): number {
  checkVerdicts('judgements', judgements)
  let sum = 0
  let n = 0
  for (let l = 0; l < judgements.length; l++) {
    if (judgements[l] === 0) continue
    sum += judgements[l]!
    n++
  }
  return n === 0 ? 0 : sum / n
}

/**
 * Integrated policy reward of every step of one trajectory (RLAnything, arXiv 2602.02488;
 * docs/design.md#algorithms): `R_j = O + lambda * mean_l S_jl`. Unparseable judgements (0) are left
 * out of the mean; a step with none parseable gets `R_j = O`. With `lambda = 0` every step gets the
 * outcome.
 * @param outcome O, the episode's outcome reward.
 * @param judgements per step j, its m judgements `[m]` (+1, -1, or 0 for unparseable).
 * @param lambda weight of the step judgements (>= 0).
 * @returns `[steps]` float64 rewards.
 * @throws ConfigError on a non-finite outcome, a negative or non-finite lambda, or a bad judgement.
 */
export function computeIntegratedStepRewards(
  outcome: number,
  judgements: readonly ArrayLike<number>[],
  lambda: number,
): Float64Array {
  if (!Number.isFinite(outcome)) throw new ConfigError('outcome', outcome, 'must be finite')
  if (!(lambda >= 0 && Number.isFinite(lambda))) throw new ConfigError('lambda', lambda, 'must be >= 0')
  const out = new Float64Array(judgements.length)
  judgements.forEach((s, j) => {
    out[j] = outcome + lambda * meanJudgement(s) // R_j = O + lambda * mean_l S_jl
  })
  return out
}

/**
 * Z-scores step rewards per step index across the rollouts of one task instance (RLAnything;
 * docs/design.md#algorithms): for each j, over the rollouts that have a step j,
 * `A_ij = (R_ij - mean_i R_ij) / (std_i R_ij + eps)`. The std is the unbiased (n - 1) estimate, as in
 * the GRPO group advantage (`computeAdvantageGrpo`), so with one step per rollout and `lambda = 0`
 * this is exactly the GRPO advantage.
 *
 * Degenerate cases: a step index reached by a single rollout gets 0 (its reward minus its own
 * mean); a step index whose rewards are all equal (zero std) gets exactly 0 (no division, no NaN).
 * Rollouts may have different numbers of steps; a step index counts only the rollouts that reached it.
 * @param rewards per rollout i, its step rewards `[steps_i]`.
 * @param eps added to the std before dividing; default `ADVANTAGE_EPS` (1e-6).
 * @returns per rollout, `[steps_i]` float64 advantages.
 * @throws ConfigError on a non-finite reward.
 */
export function zscorePerStepIndex(
  rewards: readonly ArrayLike<number>[],
  eps: number = ADVANTAGE_EPS,
): Float64Array[] {
  const out = rewards.map((r) => new Float64Array(r.length))
  const longest = Math.max(0, ...rewards.map((r) => r.length))
  rewards.forEach((r, i) => {
    for (let j = 0; j < r.length; j++)
      if (!Number.isFinite(r[j])) throw new ConfigError(`rewards[${i}][${j}]`, r[j], 'must be finite')
  })
  for (let j = 0; j < longest; j++) {
    const who = rewards.map((r, i) => (j < r.length ? i : -1)).filter((i) => i >= 0)
    const values = who.map((i) => rewards[i]![j]!)
    const n = values.length
    const mean = values.reduce((a, b) => a + b, 0) / n // mean_i R_ij
    const constant = values.every((v) => v === values[0])
    if (n < 2 || constant) continue // one rollout or zero std: 0 after centering
    const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1) // unbiased, as torch.std
    const std = Math.sqrt(variance)
    who.forEach((i, k) => {
      out[i]![j] = (values[k]! - mean) / (std + eps) // A_ij = (R_ij - mean) / (std + eps)
    })
  }
  return out
}

/**
 * Spreads one advantage per assistant step over that step's trained tokens. Step j owns the tokens
 * from `turnStarts[j]` up to the next turn's start (or the end); within that span, a token gets
 * `stepAdvantages[j]` when its loss mask is 1 and 0 otherwise (tool results between turns are
 * masked out). Tokens before the first turn get 0.
 * @param stepAdvantages `[turns]`, one per assistant step.
 * @param turnStarts `[turns]` int32 start offsets of the assistant turns in the token sequence
 *   (`Trajectory.turn_starts`), strictly increasing, each in `[0, seqLen)`.
 * @param lossMask `[seqLen]` uint8 (or 0/1 numbers): 1 on tokens the policy generated.
 * @returns `[seqLen]` float32 token advantages.
 * @throws ShapeError when the lengths disagree or the offsets are not increasing and in range.
 */
export function stepAdvantagesToTokens(
  stepAdvantages: ArrayLike<number>,
  turnStarts: ArrayLike<number>,
  lossMask: ArrayLike<number>,
): Float32Array {
  const seqLen = lossMask.length
  if (turnStarts.length !== stepAdvantages.length)
    throw new ShapeError('stepAdvantages', `${turnStarts.length} values (one per turn start)`, [
      stepAdvantages.length,
    ])
  for (let j = 0; j < turnStarts.length; j++) {
    const s = turnStarts[j]!
    if (!Number.isInteger(s) || s < 0 || s >= seqLen || (j > 0 && s <= turnStarts[j - 1]!))
      throw new ShapeError(
        'turnStarts',
        `strictly increasing offsets in [0, ${seqLen}) (offset ${j} is ${s})`,
        [turnStarts.length],
      )
  }
  const out = new Float32Array(seqLen)
  for (let j = 0; j < turnStarts.length; j++) {
    const end = j + 1 < turnStarts.length ? turnStarts[j + 1]! : seqLen
    for (let t = turnStarts[j]!; t < end; t++) if (lossMask[t]) out[t] = stepAdvantages[j]! // A_t = A_j on step j's tokens
  }
  return out
}

/** One rollout of a group, as `computeGroupStepAdvantages` needs it. */
export interface StepRewardRollout {
  /** Outcome reward O of the episode. */
  outcome: number
  /** Per assistant step, its m judgements (+1, -1, 0 unparseable); empty arrays when there are none. */
  judgements: readonly ArrayLike<number>[]
  /** `[turns]` int32 start offsets of the assistant turns (`Trajectory.turn_starts`). */
  turnStarts: ArrayLike<number>
  /** `[seqLen]` uint8 loss mask (`Trajectory.loss_mask`). */
  lossMask: ArrayLike<number>
}

/** Result of `computeGroupStepAdvantages`. */
export interface GroupStepAdvantages {
  /** Per rollout, `[turns]` step rewards `R_j`. */
  rewards: Float64Array[]
  /** Per rollout, `[turns]` z-scored step advantages. */
  stepAdvantages: Float64Array[]
  /** Per rollout, `[seqLen_i]` float32 token advantages. */
  tokenAdvantages: Float32Array[]
}

/**
 * The whole step-reward path for the G rollouts of one task instance: integrated rewards
 * (`computeIntegratedStepRewards`), z-scored per step index (`zscorePerStepIndex`), spread over each
 * step's tokens (`stepAdvantagesToTokens`).
 * @throws ShapeError when a rollout's judgements do not match its turn starts; ConfigError on bad values.
 */
export function computeGroupStepAdvantages(
  rollouts: readonly StepRewardRollout[],
  lambda: number,
  eps: number = ADVANTAGE_EPS,
): GroupStepAdvantages {
  const rewards = rollouts.map((r, i) => {
    if (r.judgements.length !== r.turnStarts.length)
      throw new ShapeError(`rollouts[${i}].judgements`, `${r.turnStarts.length} steps (one per turn start)`, [
        r.judgements.length,
      ])
    return computeIntegratedStepRewards(r.outcome, r.judgements, lambda)
  })
  const stepAdvantages = zscorePerStepIndex(rewards, eps)
  const tokenAdvantages = rollouts.map((r, i) =>
    stepAdvantagesToTokens(stepAdvantages[i]!, r.turnStarts, r.lossMask),
  )
  return { rewards, stepAdvantages, tokenAdvantages }
}

/**
 * Right-pads per-rollout token advantages into one `[batch, seqLen]` float32 matrix (row-major), the
 * `stepAdvantages` input of an RL batch.
 * @throws ShapeError when a row is longer than `seqLen`.
 */
export function padTokenAdvantages(rows: readonly Float32Array[], seqLen: number): Float32Array {
  const out = new Float32Array(rows.length * seqLen)
  rows.forEach((row, i) => {
    if (row.length > seqLen) throw new ShapeError(`rows[${i}]`, `at most ${seqLen} tokens`, [row.length])
    out.set(row, i * seqLen)
  })
  return out
}
