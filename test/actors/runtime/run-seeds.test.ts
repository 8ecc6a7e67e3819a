import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runSeeds } from '../../../actors/index.ts'
import { annotateSeedOf, judgedStepsSeedOf } from '../../../actors/testing.ts'

describe('actors/runtime/run-seeds', () => {
  it('runSeeds - each stream keeps the seed the run gave it before the block (same seed, same run)', () => {
    const s = runSeeds(3)
    assert.deepEqual(
      {
        policy: s.policy,
        rewardModel: s.rewardModel,
        sftExpert: s.sftExpert(2),
        rewardModelSftTrain: s.rewardModelSftTrain(2),
        rewardModelSftHeldOut: s.rewardModelSftHeldOut(2),
        envWorker: s.envWorker(1),
        policyRouter: s.policyRouter,
        rewardActor: s.rewardActor,
        rollout: s.rollout,
        heldOutEvaluation: s.heldOutEvaluation,
      },
      {
        policy: 3,
        rewardModel: 10,
        sftExpert: 3 * 7919 + 2,
        rewardModelSftTrain: 3 * 7919 + 1_000_003 + 2,
        rewardModelSftHeldOut: 3 * 7919 + 2_000_003 + 2,
        envWorker: 4,
        policyRouter: 20,
        rewardActor: 26,
        rollout: 104,
        heldOutEvaluation: 4245,
      },
    )
    assert.equal(annotateSeedOf(104), 104 ^ 0x5bd1e995)
    assert.equal(judgedStepsSeedOf(2), 9)
  })

  it('runSeeds - the single streams of one run seed are all different', () => {
    const s = runSeeds(0)
    const singles = [s.policy, s.rewardModel, s.policyRouter, s.rewardActor, s.rollout, s.heldOutEvaluation]
    assert.equal(new Set(singles).size, singles.length)
    assert.ok(Object.isFrozen(s))
  })
})
