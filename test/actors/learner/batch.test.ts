import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BatchError, packGroups } from '../../../actors/testing.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'

/** A sample: `prompt` tokens untrained, then `response` tokens trained with logprob -0.5 at `version`. */
function sample(prompt: number[], response: number[], reward: number, version = 3) {
  const tokens = [...prompt, ...response]
  return {
    tokens: Int32Array.from(tokens),
    loss_mask: Uint8Array.from(tokens.map((_, i) => (i >= prompt.length ? 1 : 0))),
    logprobs: Float32Array.from(tokens.map((_, i) => (i >= prompt.length ? -0.5 : 0))),
    versions: Int32Array.from(tokens.map((_, i) => (i >= prompt.length ? version : -1))),
    turn_starts: Int32Array.from([prompt.length]),
    reward,
    status: 'completed' as const,
    turns: 1,
    metrics: {},
    stale_turns: 0,
  }
}

const group = (id: string, task: string, samples: ReturnType<typeof sample>[]): TrajectoryGroupPayload => ({
  group_id: id,
  task,
  index: 0,
  seed: 1,
  difficulty: 0,
  started_version: 3,
  samples,
})

describe('actors/learner/batch', () => {
  it('batch - packs ragged groups right-padded, mask 0 on padding, tasks and groups per row', () => {
    const b = packGroups(
      [
        group('g1', 'calc', [sample([1, 2], [3], 1), sample([1, 2], [4, 5], 0)]),
        group('g2', 'shop', [sample([9], [8], 0.5)]),
      ],
      { maxTokens: 16, padId: 0 },
    )
    assert.equal(b.batch, 3)
    assert.equal(b.seqLen, 4)
    assert.deepEqual([...b.tokens], [1, 2, 3, 0, 1, 2, 4, 5, 9, 8, 0, 0])
    assert.deepEqual([...b.lossMask], [0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0])
    assert.deepEqual([...b.behaviorLogprobs], [0, 0, -0.5, 0, 0, 0, -0.5, -0.5, 0, -0.5, 0, 0])
    assert.deepEqual([...b.weightVersions], [-1, -1, 3, -1, -1, -1, 3, 3, -1, 3, -1, -1])
    assert.deepEqual(b.tasks, ['calc', 'calc', 'shop'])
    assert.deepEqual(b.groupIds, ['g1', 'g1', 'g2'])
    assert.deepEqual([...b.rewards], [1, 0, 0.5])
  })

  it('batch - step advantages are packed right-padded per sample; rows that do not match are BatchErrors', () => {
    const groups = [group('g1', 'calc', [sample([1, 2], [3], 1), sample([1], [4, 5], 0)])]
    const b = packGroups(groups, {
      maxTokens: 16,
      stepAdvantages: [Float32Array.from([0, 0, 0.5]), Float32Array.from([0, -1, -2])],
    })
    assert.equal(b.seqLen, 3)
    assert.deepEqual([...b.stepAdvantages!], [0, 0, 0.5, 0, -1, -2])
    assert.equal(packGroups(groups, { maxTokens: 16 }).stepAdvantages, undefined)
    assert.throws(
      () => packGroups(groups, { maxTokens: 16, stepAdvantages: [new Float32Array(3)] }),
      BatchError,
    )
    assert.throws(
      () => packGroups(groups, { maxTokens: 16, stepAdvantages: [new Float32Array(3), new Float32Array(2)] }),
      (e: unknown) => e instanceof BatchError && e.groupId === 'g1' && e.sample === 1,
    )
  })

  it('batch - a mask on the first token is dropped (it has no context)', () => {
    const s = sample([], [5, 6], 1)
    const b = packGroups([group('g', 't', [s])], { maxTokens: 8 })
    assert.deepEqual([...b.lossMask], [0, 1])
  })

  it('batch - empty input, too-long samples and ragged arrays are BatchErrors naming the group', () => {
    assert.throws(() => packGroups([], { maxTokens: 8 }), BatchError)
    assert.throws(
      () => packGroups([group('long', 't', [sample([1], [2, 3, 4], 1)])], { maxTokens: 3 }),
      (e: unknown) =>
        e instanceof BatchError && e.groupId === 'long' && e.sample === 0 && /4 tokens/.test(e.message),
    )
    const bad = { ...sample([1], [2], 1), logprobs: new Float32Array(1) }
    assert.throws(
      () => packGroups([group('ragged', 't', [sample([1], [2], 0), bad])], { maxTokens: 8 }),
      (e: unknown) => e instanceof BatchError && e.groupId === 'ragged' && e.sample === 1,
    )
  })
})
