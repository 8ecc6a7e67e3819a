import * as tf from '@tensorflow/tfjs'
import { computeOverlongPenalty, type OverlongConfig } from './overlong.ts'
import type { RlBatch } from './rl-batch.ts'

/** Largest reward spread (max - min) of a group that still counts as one reward for all. */
const UNIFORM_SPREAD = 1e-6

/**
 * Dynamic sampling (DAPO, arXiv 2503.14476, Sec. 3.2, the constraint of Eq. 10): a group whose
 * samples all got the same reward (all solved or all failed, after overlong shaping) has a group
 * advantage of 0 for every sample, so it adds no gradient; under token-mean aggregation it only
 * dilutes the loss, and it still costs a forward and backward pass. This returns the batch with
 * the loss mask of such groups set to 0, so the step neither trains on them nor counts their
 * tokens. With step advantages (`RlBatch.stepAdvantages`, RLAnything) a group is kept when any of
 * its trained tokens has a non-zero step advantage, whatever its outcomes.
 * @param overlong the shaping of the step (the penalty is part of the reward a group is uniform in).
 * @returns the batch (a copy of `lossMask`, other arrays shared) and the numbers of groups and
 *   trajectories masked out; the input batch unchanged.
 */
export function maskUniformGroups(
  batch: RlBatch,
  overlong?: OverlongConfig,
): { batch: RlBatch; droppedGroups: number; droppedTrajectories: number } {
  const { seqLen } = batch
  const rowTrained = (i: number) => batch.lossMask.subarray(i * seqLen, (i + 1) * seqLen)
  let informative: (rows: number[]) => boolean
  if (batch.stepAdvantages) {
    const adv = batch.stepAdvantages
    informative = (rows) =>
      rows.some((i) => rowTrained(i).some((m, t) => m !== 0 && adv[i * seqLen + t] !== 0))
  } else {
    const rewards = Float32Array.from(batch.rewards)
    if (overlong) {
      const lengths = Array.from({ length: batch.batch }, (_, i) => rowTrained(i).reduce((a, m) => a + m, 0))
      const penalty = tf.tidy(() => computeOverlongPenalty(tf.tensor1d(lengths), overlong).dataSync())
      penalty.forEach((p, i) => {
        rewards[i]! += p
      })
    }
    informative = (rows) => {
      let lo = Number.POSITIVE_INFINITY
      let hi = Number.NEGATIVE_INFINITY
      for (const i of rows) {
        lo = Math.min(lo, rewards[i]!)
        hi = Math.max(hi, rewards[i]!)
      }
      return hi - lo > UNIFORM_SPREAD
    }
  }
  const groups = new Map<string, number[]>()
  batch.groupIds.forEach((g, i) => {
    const rows = groups.get(g)
    if (rows) rows.push(i)
    else groups.set(g, [i])
  })
  const lossMask = Float32Array.from(batch.lossMask)
  let droppedGroups = 0
  let droppedTrajectories = 0
  for (const rows of groups.values()) {
    if (informative(rows)) continue
    droppedGroups++
    droppedTrajectories += rows.length
    for (const i of rows) lossMask.fill(0, i * seqLen, (i + 1) * seqLen)
  }
  return { batch: { ...batch, lossMask }, droppedGroups, droppedTrajectories }
}
