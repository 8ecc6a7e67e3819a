import { padTokenAdvantages, type RlBatch } from '../../gpu/index.ts'
import type { TrajectoryGroupPayload } from '../../protocols/index.ts'
import { BatchError } from './errors.ts'

/** Options of `packGroups`. */
export interface PackOptions {
  /** Longest trajectory accepted, in tokens (the model's context + 1: the last token is only a target). */
  maxTokens: number
  /** Token id written into padding (never trained, never attended by earlier tokens); default 0. */
  padId?: number
  /**
   * Token-level advantages of each sample, in packing order (group by group, sample by sample),
   * each `[seqLen_i]` float32 (the step rewards of RLAnything, `policyStepAdvantages`); packed
   * right-padded into `RlBatch.stepAdvantages` `[batch, seqLen]`. Absent: the step computes GRPO
   * advantages from the rewards.
   */
  stepAdvantages?: readonly Float32Array[]
}

/**
 * Packs whole groups into one right-padded `RlBatch`: row i is one sample, `seqLen` the longest
 * sample; padding has mask 0. The group id names the GRPO group, the group's task the task.
 * A token at position 0 is never trained (it has no context), so its mask is forced to 0.
 * @throws BatchError on no groups, a sample longer than `maxTokens`, per-token arrays of
 *   different lengths, or step advantages that do not match the samples.
 */
export function packGroups(groups: readonly TrajectoryGroupPayload[], options: PackOptions): RlBatch {
  const samples = groups.flatMap((g) => g.samples.map((s, i) => ({ g, s, i })))
  if (samples.length === 0) throw new BatchError('no trajectories to train on')
  let seqLen = 2
  for (const { g, s, i } of samples) {
    const n = s.tokens.length
    if (s.loss_mask.length !== n || s.logprobs.length !== n || s.versions.length !== n) {
      throw new BatchError(
        `group ${g.group_id} sample ${i}: tokens, loss_mask, logprobs and versions differ in length (${n}, ${s.loss_mask.length}, ${s.logprobs.length}, ${s.versions.length})`,
        { groupId: g.group_id, sample: i },
      )
    }
    if (n > options.maxTokens) {
      throw new BatchError(
        `group ${g.group_id} sample ${i}: ${n} tokens, more than the ${options.maxTokens} the model takes`,
        { groupId: g.group_id, sample: i },
      )
    }
    seqLen = Math.max(seqLen, n)
  }
  const batch = samples.length
  const steps = options.stepAdvantages
  if (steps) {
    if (steps.length !== batch)
      throw new BatchError(`${steps.length} rows of step advantages for ${batch} samples`, {})
    samples.forEach(({ g, s, i }, row) => {
      if (steps[row]!.length !== s.tokens.length)
        throw new BatchError(
          `group ${g.group_id} sample ${i}: ${steps[row]!.length} step advantages for ${s.tokens.length} tokens`,
          { groupId: g.group_id, sample: i },
        )
    })
  }
  const tokens = new Int32Array(batch * seqLen).fill(options.padId ?? 0)
  const lossMask = new Float32Array(batch * seqLen)
  const behaviorLogprobs = new Float32Array(batch * seqLen)
  const weightVersions = new Int32Array(batch * seqLen).fill(-1)
  samples.forEach(({ s }, row) => {
    const at = row * seqLen
    tokens.set(s.tokens, at)
    behaviorLogprobs.set(s.logprobs, at)
    weightVersions.set(s.versions, at)
    for (let t = 1; t < s.tokens.length; t++) lossMask[at + t] = s.loss_mask[t] ? 1 : 0
  })
  return {
    batch,
    seqLen,
    tokens,
    lossMask,
    behaviorLogprobs,
    weightVersions,
    tasks: samples.map(({ g }) => g.task),
    groupIds: samples.map(({ g }) => g.group_id),
    rewards: Float32Array.from(samples.map(({ s }) => s.reward)),
    ...(steps ? { stepAdvantages: padTokenAdvantages(steps, seqLen) } : {}),
  }
}
