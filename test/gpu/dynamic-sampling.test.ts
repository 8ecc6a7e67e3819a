import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { maskUniformGroups } from '../../gpu/dynamic-sampling.ts'
import type { RlBatch } from '../../gpu/rl-batch.ts'

/** A batch of rows of `seqLen` 4 whose columns `1..trained[i]` are trained. */
function batchOf(
  groupIds: string[],
  rewards: number[],
  trained: number[],
  extra: Partial<RlBatch> = {},
): RlBatch {
  const seqLen = 4
  return {
    batch: groupIds.length,
    seqLen,
    tokens: new Int32Array(groupIds.length * seqLen),
    lossMask: Float32Array.from(trained.flatMap((n) => [0, 1, 2, 3].map((t) => (t >= 1 && t <= n ? 1 : 0)))),
    behaviorLogprobs: new Float32Array(groupIds.length * seqLen),
    weightVersions: new Int32Array(groupIds.length * seqLen),
    tasks: groupIds.map(() => 'toy'),
    groupIds,
    rewards: Float32Array.from(rewards),
    ...extra,
  }
}

describe('gpu/dynamic-sampling', () => {
  it('dynamic-sampling - groups with one reward for all are masked out, the others kept as they are', () => {
    const batch = batchOf(['a', 'a', 'b', 'b', 'c', 'c'], [1, 0, 0, 0, 1, 1], [3, 3, 3, 2, 1, 3])
    const before = Array.from(batch.lossMask)
    const r = maskUniformGroups(batch)
    assert.equal(r.droppedGroups, 2)
    assert.equal(r.droppedTrajectories, 4)
    assert.deepEqual(Array.from(r.batch.lossMask), [...before.slice(0, 8), ...new Array(16).fill(0)])
    assert.deepEqual(Array.from(batch.lossMask), before, 'the input batch is unchanged')
    assert.equal(r.batch.tokens, batch.tokens, 'other arrays are shared, not copied')
  })

  it('dynamic-sampling - the overlong penalty is part of the reward: same outcome, different lengths is informative', () => {
    // L_max 3, L_buf 2: 1 token -> 0, 2 tokens -> -0.5, 3 tokens -> -1.
    const batch = batchOf(['a', 'a', 'b', 'b'], [1, 1, 1, 1], [1, 2, 3, 3])
    const r = maskUniformGroups(batch, { L_max: 3, L_buf: 2 })
    assert.equal(r.droppedGroups, 1)
    assert.deepEqual(Array.from(r.batch.lossMask.subarray(0, 8)), [0, 1, 0, 0, 0, 1, 1, 0])
    assert.equal(maskUniformGroups(batch).droppedGroups, 2, 'without shaping both groups are uniform')
  })

  it('dynamic-sampling - with step advantages a group is kept when any trained token has a non-zero one', () => {
    const stepAdvantages = Float32Array.from([
      ...[9, 0, 0, 0], // row 0: non-zero only on an untrained column
      ...[0, 0, 0, 0],
      ...[0, 0, 0.5, 0], // row 2: non-zero on a trained token
      ...[0, 0, 0, 0],
    ])
    const batch = batchOf(['a', 'a', 'b', 'b'], [0, 0, 0, 0], [3, 3, 3, 3], { stepAdvantages })
    const r = maskUniformGroups(batch)
    assert.equal(r.droppedGroups, 1)
    assert.deepEqual(Array.from(r.batch.lossMask), [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1])
  })
})
