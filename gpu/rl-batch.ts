import { ConfigError, ShapeError } from './errors.ts'

/**
 * One batch of trajectories for an RL update. Every `[batch, seqLen]` array is row-major and
 * right-padded; position t of every per-token array belongs to token `tokens[i, t]`.
 */
export interface RlBatch {
  /** Number of trajectories. */
  batch: number
  /** Tokens per (padded) trajectory. */
  seqLen: number
  /** Token ids `[batch, seqLen]` int32: prompt, responses, tool outputs, padding. */
  tokens: Int32Array
  /**
   * `[batch, seqLen]` float32: 1 for a token the policy generated and the loss trains on; 0 for
   * prompt, tool output and padding. Column 0 must be 0 (the first token has no context).
   */
  lossMask: Float32Array
  /** `[batch, seqLen]` float32: log-probability of each token under the engine that sampled it (0 where unmasked). */
  behaviorLogprobs: Float32Array
  /** `[batch, seqLen]` int32: weight version of the engine that produced each token (any value where unmasked). */
  weightVersions: Int32Array
  /** Task name of each trajectory: length `batch`. */
  tasks: readonly string[]
  /** Group of each trajectory (the G samples of one task instance share one): length `batch`. */
  groupIds: readonly string[]
  /** Outcome reward of each trajectory: `[batch]` float32. */
  rewards: Float32Array
  /**
   * Optional step-wise advantages `[batch, seqLen]` float32 (RLAnything: the step reward already
   * holds the outcome, z-scored per step index). When given they replace the group advantages,
   * then task normalization applies; the overlong penalty must then be in the outcome they were
   * built from (`policyStepAdvantages` with `overlong`), since the shaped rewards here are not used.
   */
  stepAdvantages?: Float32Array
}

/**
 * Checks a batch against its contract: sizes, per-token and per-trajectory array lengths, column 0
 * of the loss mask all 0, finite rewards.
 * @throws ConfigError on a bad size or a non-finite reward; ShapeError on an array of the wrong length.
 */
export function checkBatch(b: RlBatch): void {
  const cells = b.batch * b.seqLen
  if (!Number.isInteger(b.batch) || b.batch < 1)
    throw new ConfigError('batch', b.batch, 'must be an integer >= 1')
  if (!Number.isInteger(b.seqLen) || b.seqLen < 2)
    throw new ConfigError('seqLen', b.seqLen, 'must be an integer >= 2')
  const perToken = {
    tokens: b.tokens,
    lossMask: b.lossMask,
    behaviorLogprobs: b.behaviorLogprobs,
    weightVersions: b.weightVersions,
    stepAdvantages: b.stepAdvantages,
  }
  for (const [name, arr] of Object.entries(perToken)) {
    if (arr !== undefined && arr.length !== cells)
      throw new ShapeError(name, `[${b.batch}, ${b.seqLen}] (${cells} values)`, [arr.length])
  }
  const perSeq = { tasks: b.tasks, groupIds: b.groupIds, rewards: b.rewards }
  for (const [name, arr] of Object.entries(perSeq)) {
    if (arr.length !== b.batch) throw new ShapeError(name, `[${b.batch}]`, [arr.length])
  }
  for (let i = 0; i < b.batch; i++) {
    if (b.lossMask[i * b.seqLen] !== 0)
      throw new ShapeError('lossMask', 'column 0 all 0 (the first token has no context)', [b.batch, b.seqLen])
    if (!Number.isFinite(b.rewards[i]!))
      throw new ConfigError(`rewards[${i}]`, b.rewards[i], 'must be finite')
  }
}
