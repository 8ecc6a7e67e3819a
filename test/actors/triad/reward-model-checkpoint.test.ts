import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { TRIAD_SWITCHES_DEFAULTS } from '../../../actors/index.ts'
import {
  LearnerCheckpointError,
  loadRewardModelCheckpoint,
  RewardModelLearner,
  saveRewardModelCheckpoint,
} from '../../../actors/testing.ts'
import { Tokenizer } from '../../../gpu/index.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'
import { judgedGroup, judgedSample } from '../../support/judged-sample.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const switches = {
  ...TRIAD_SWITCHES_DEFAULTS,
  stepReward: { enabled: true, lambda: 0.5, m: 1, minAccuracy: 0 },
}
const tokenizer = new Tokenizer()
const config = (width: number) => ({
  layers: 1,
  width,
  heads: 2,
  contextLength: 64,
  vocabSize: tokenizer.vocabSize,
})

/** A group of two one-turn samples, each judged once: one right verdict, one wrong. */
function judgedGroupOfTwo(): TrajectoryGroupPayload {
  const sample = (reward: number, verdict: number) =>
    judgedSample(reward, {
      judgements: [verdict],
      tokens: [verdict > 0 ? 0x2b : 0x2d],
      logprobs: [-0.7],
      prompt: [7, 8, 9],
    })
  return judgedGroup([sample(1, 1), sample(0, 1)])
}

const sameArrays = (a: Record<string, Float32Array>, b: Record<string, Float32Array>) =>
  Object.keys(a).length === Object.keys(b).length &&
  Object.entries(a).every(([k, v]) => b[k] !== undefined && v.every((x, i) => x === b[k]![i]))

describe('actors/triad/reward-model-checkpoint', () => {
  before(async () => {
    await useTestBackend()
  })

  it('reward-model-checkpoint - a saved reward model loads back: weights, AdamW moments and update count', async () => {
    const trained = new RewardModelLearner({ config: config(16), tokenizer }, 3, 1e-2, switches)
    const initial = await trained.weights()
    const { trained: changed } = await trained.step([judgedGroupOfTwo()])
    assert.equal(changed, true)
    const weights = await trained.weights()
    assert.ok(!sameArrays(initial, weights), 'the update changed the weights')
    const dir = join(mkdtempSync(join(tmpdir(), 'triad-rmck-')), 'reward-model')
    await saveRewardModelCheckpoint(dir, trained)

    const fresh = new RewardModelLearner({ config: config(16), tokenizer }, 3, 1e-2, switches)
    assert.ok(sameArrays(await fresh.weights(), initial), 'same seed, same initial weights')
    await loadRewardModelCheckpoint(dir, fresh)
    assert.ok(sameArrays(await fresh.weights(), weights))
    assert.equal(fresh.updates, 1)
    const [a, b] = [await trained.optimizer.state(), await fresh.optimizer.state()]
    assert.equal(b.step, a.step)
    assert.ok(sameArrays(a.tensors, b.tensors))
    // The next update is the same on both.
    await trained.step([judgedGroupOfTwo()])
    await fresh.step([judgedGroupOfTwo()])
    assert.ok(sameArrays(await fresh.weights(), await trained.weights()))
    rmSync(dir, { recursive: true, force: true })
  })

  it('reward-model-checkpoint - a missing checkpoint or one of another size is a clear error and changes nothing', async () => {
    const learner = new RewardModelLearner({ config: config(16), tokenizer }, 3, 1e-2, switches)
    const before = await learner.weights()
    const missing = join(mkdtempSync(join(tmpdir(), 'triad-rmck-')), 'reward-model')
    await assert.rejects(
      loadRewardModelCheckpoint(missing, learner),
      (err: Error) =>
        err instanceof LearnerCheckpointError &&
        err.message.startsWith(`${missing}: cannot read the reward model: ENOENT`),
    )
    const wider = new RewardModelLearner({ config: config(32), tokenizer }, 3, 1e-2, switches)
    const dir = join(mkdtempSync(join(tmpdir(), 'triad-rmck-')), 'reward-model')
    await saveRewardModelCheckpoint(dir, wider)
    await assert.rejects(
      loadRewardModelCheckpoint(dir, learner),
      (err: Error) =>
        err instanceof LearnerCheckpointError &&
        /: reward model config \{.*"width":32.*\} differs from the learner's \{.*"width":16.*\}$/.test(
          err.message,
        ),
    )
    assert.ok(sameArrays(await learner.weights(), before))
    assert.equal(learner.updates, 0)
  })
})
