import * as tf from '@tensorflow/tfjs'
import { ShapeError } from './errors.ts'
import { defineRegistry, lookupVariant } from './registry.ts'
import { assertMatrix, assertShape } from './shape.ts'

/** The epsilon added to every standard deviation before dividing (docs/design.md#algorithms). */
export const ADVANTAGE_EPS = 1e-6

/**
 * One-hot membership matrix of `ids`: `[batch, numGroups]` float32, row i has a 1 in the column of
 * `ids[i]` (columns in order of first appearance). Used instead of a segment sum so that every
 * tfjs backend (wasm has no `UnsortedSegmentSum`) computes group statistics by matmul.
 */
export function membership(ids: readonly (string | number)[]): tf.Tensor2D {
  const column = new Map<string | number, number>()
  for (const id of ids) if (!column.has(id)) column.set(id, column.size)
  const data = new Float32Array(ids.length * column.size)
  ids.forEach((id, i) => {
    data[i * column.size + column.get(id)!] = 1
  })
  return tf.tensor2d(data, [ids.length, column.size])
}

/** Stands in for minus infinity in masked maxima (float32 infinity times 0 would give NaN). */
const LARGE = 1e30

/** Per-group maximum of `values` (`[batch]`, each |v| < 1e30) under membership `g` `[batch, groups]`. */
function groupMax(values: tf.Tensor1D, g: tf.Tensor2D): tf.Tensor1D {
  return values.reshape([-1, 1]).mul(g).add(g.sub(1).mul(LARGE)).max(0) as tf.Tensor1D
}

/** Options of a group advantage estimator. */
export interface GroupAdvantageInput {
  /** Outcome reward of each sample: `[batch]` float32. */
  rewards: tf.Tensor1D
  /** Group of each sample (one task instance sampled G times shares one id): length `batch`. */
  groupIds: readonly (string | number)[]
  /** Added to the std before dividing; default `ADVANTAGE_EPS` (1e-6). */
  eps?: number
}

/** A group advantage estimator: `[batch]` rewards to `[batch]` float32 advantages. */
export type GroupAdvantageEstimator = (input: GroupAdvantageInput) => tf.Tensor1D

function checkGroups(input: GroupAdvantageInput): number {
  if (input.rewards.rank !== 1) throw new ShapeError('rewards', '[batch]', input.rewards.shape)
  const batch = input.rewards.shape[0]
  if (input.groupIds.length !== batch)
    throw new ShapeError('groupIds', `length ${batch}`, [input.groupIds.length])
  return batch
}

function groupAdvantage(input: GroupAdvantageInput, divideByStd: boolean): tf.Tensor1D {
  checkGroups(input)
  const eps = input.eps ?? ADVANTAGE_EPS
  return tf.tidy(() => {
    const r = input.rewards.toFloat()
    const g = membership(input.groupIds) // [batch, groups]
    const count = g.sum(0) // [groups]
    const rCol = r.reshape([-1, 1])
    const mean = rCol.mul(g).sum(0).div(count) // mean_G R
    const centered = r.sub(g.matMul(mean.reshape([-1, 1])).reshape([-1])) // R_i - mean_G R
    // Unbiased (n - 1) std, as verl's GRPO estimator (torch.std); a group of one has std 0.
    const variance = centered.square().reshape([-1, 1]).mul(g).sum(0).div(count.sub(1).maximum(1))
    const std = g.matMul(variance.sqrt().reshape([-1, 1])).reshape([-1])
    // A group whose rewards are all equal gets exactly 0 (no rounding residue, no NaN).
    const [hi, lo] = [groupMax(r, g), groupMax(r.neg(), g).neg()]
    const constant = g
      .matMul(hi.lessEqual(lo).toFloat().reshape([-1, 1]))
      .reshape([-1])
      .greater(0)
    const adv = divideByStd ? centered.div(std.add(eps)) : centered // A_i = (R_i - mean_G R) / (std_G R + eps)
    return tf.where(constant, tf.zerosLike(adv), adv) as tf.Tensor1D
  })
}

/**
 * GRPO group advantage (DeepSeekMath, arXiv 2402.03300, sec. 4.1.2; DemyAgent GRPO-TCR):
 * `A_i = (R_i - mean_G R) / (std_G R + eps)` over the samples of one group.
 * The std is the unbiased (n - 1) estimate, as in verl (DemyAgent's base). A group whose rewards
 * are all equal, and a group of one sample, gets advantage 0 (never NaN).
 * @returns `[batch]` float32 advantages; broadcast them to tokens with `broadcastToTokens`.
 * @throws ShapeError when `rewards` is not 1-D or `groupIds` has another length.
 */
export function computeAdvantageGrpo(input: GroupAdvantageInput): tf.Tensor1D {
  return groupAdvantage(input, true)
}

/**
 * GRPO group advantage without the division by the std (Dr. GRPO, arXiv 2503.20783, eq. 3):
 * `A_i = R_i - mean_G R`. Equal rewards give 0.
 * @returns `[batch]` float32 advantages.
 * @throws ShapeError when `rewards` is not 1-D or `groupIds` has another length.
 */
export function computeAdvantageGrpoNoStd(input: GroupAdvantageInput): tf.Tensor1D {
  return groupAdvantage(input, false)
}

/** Registered group advantage estimators, by name. */
export const AdvantageEstimators = defineRegistry<GroupAdvantageEstimator>({
  grpo: computeAdvantageGrpo,
  'grpo-no-std': computeAdvantageGrpoNoStd,
})
/** Names of the registered group advantage estimators. */
export const AdvantageEstimatorName = { Grpo: 'grpo', GrpoNoStd: 'grpo-no-std' } as const
export type AdvantageEstimatorName = (typeof AdvantageEstimatorName)[keyof typeof AdvantageEstimatorName]

/**
 * Looks an advantage estimator up by name.
 * @throws UnknownVariantError listing the valid names.
 */
export function getAdvantageEstimator(name: string): GroupAdvantageEstimator {
  return lookupVariant('advantage estimator', AdvantageEstimators, name)
}

/**
 * Broadcasts one advantage per sample to its loss-masked tokens.
 * @param advantages `[batch]` float32.
 * @param mask `[batch, seqLen]` float32, 1 for a response token the loss counts, 0 for prompt,
 *   tool output and padding.
 * @returns `[batch, seqLen]` float32, `advantages[i] * mask[i, t]`.
 * @throws ShapeError when the batch sizes differ.
 */
export function broadcastToTokens(advantages: tf.Tensor1D, mask: tf.Tensor2D): tf.Tensor2D {
  const [batch] = assertMatrix('mask', mask)
  assertShape('advantages', advantages, [batch])
  return tf.tidy(() => advantages.reshape([-1, 1]).mul(mask.toFloat()) as tf.Tensor2D)
}

/** Input of `normalizeTaskAdvantages`. */
export interface TaskNormalizationInput {
  /** Token advantages after the group normalization: `[batch, seqLen]` float32. */
  advantages: tf.Tensor2D
  /** `[batch, seqLen]` float32, 1 for a loss-masked (trained) token, else 0. */
  mask: tf.Tensor2D
  /** Task of each sample: length `batch`. */
  taskIds: readonly (string | number)[]
  /** Added to the std before dividing; default `ADVANTAGE_EPS` (1e-6). */
  eps?: number
}

/**
 * Task advantage normalization (AgentRL, arXiv 2510.04206, sec. 3.3): for each task k, mean and
 * std over the advantages of every loss-masked token of task k, then
 * `A <- (A - mean_k) / (std_k + eps)`. The std is the population std over tokens, so a task's
 * normalized tokens have mean 0 and std 1 (up to eps). A task whose masked advantages are all
 * equal gets 0. Unmasked tokens come out 0.
 * @returns `[batch, seqLen]` float32.
 * @throws ShapeError when shapes or `taskIds`' length disagree.
 */
export function normalizeTaskAdvantages(input: TaskNormalizationInput): tf.Tensor2D {
  const [batch, seqLen] = assertMatrix('advantages', input.advantages)
  assertShape('mask', input.mask, [batch, seqLen])
  if (input.taskIds.length !== batch)
    throw new ShapeError('taskIds', `length ${batch}`, [input.taskIds.length])
  const eps = input.eps ?? ADVANTAGE_EPS
  return tf.tidy(() => {
    const m = input.mask.toFloat()
    const a = input.advantages.toFloat().mul(m)
    const k = membership(input.taskIds) // [batch, tasks]
    const perTask = (perSample: tf.Tensor1D) => perSample.reshape([1, -1]).matMul(k).reshape([-1]) // [tasks]
    const toSamples = (perTaskValues: tf.Tensor) => k.matMul(perTaskValues.reshape([-1, 1])) // [batch, 1]
    const count = perTask(m.sum(1)).maximum(1)
    const mean = toSamples(perTask(a.sum(1)).div(count)) // mean_k
    const centered = a.sub(mean).mul(m) // A - mean_k
    const std = toSamples(perTask(centered.square().sum(1)).div(count).sqrt()) // std_k (population)
    const none = tf.fill(a.shape, LARGE)
    const sampleMax = tf.where(m.greater(0), a, none.neg()).max(1) as tf.Tensor1D // [batch]
    const sampleMin = tf.where(m.greater(0), a, none).min(1) as tf.Tensor1D
    const [taskMax, taskMin] = [groupMax(sampleMax, k), groupMax(sampleMin.neg(), k).neg()]
    const constant = toSamples(taskMax.lessEqual(taskMin).toFloat()).greater(0) // [batch, 1]
    const normalized = centered.div(std.add(eps)) // A <- (A - mean_k) / (std_k + eps)
    return tf.where(constant, tf.zerosLike(normalized), normalized).mul(m) as tf.Tensor2D
  })
}
