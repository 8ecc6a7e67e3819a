import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import {
  buildRewardModelBatch,
  judgementAccuracy,
  RewardModel,
  TRIAD_SWITCHES_DEFAULTS,
  trainRewardModelStep,
} from '../../../actors/triad/index.ts'
import { AdamW, ConfigError, REWARD_MODEL_STEP_DEFAULTS } from '../../../gpu/index.ts'
import { metricEntries } from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { compassBatch, compassEvalSet } from './synthetic-steps.ts'

const close = (actual: ArrayLike<number>, expected: readonly number[], tol = 1e-5) => {
  assert.equal(actual.length, expected.length)
  for (let i = 0; i < expected.length; i++)
    assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`)
}

const config = { layers: 1, width: 32, heads: 2, contextLength: 48, vocabSize: 264 }
const prompt = { system: () => 'j' }

describe('actors/triad/reward-training', () => {
  before(async () => {
    await useTestBackend()
  })

  it('batch - verdict tokens with their logprobs, consistency rewards z-scored per step as advantages', () => {
    const { batch, metrics } = buildRewardModelBatch([
      // r = 0 (failed): O = -1, S = [+1, +1, +1, -1], mean S 0.5: raw (-1 + 0.5) * S = [-0.5, -0.5, -0.5, 0.5],
      // mean -0.25, unbiased std 0.5: advantages [-0.5, -0.5, -0.5, 1.5] (the judgement "bad" wins)
      {
        prompt: Int32Array.from([1, 2, 3]),
        outcome: 0,
        tokens: [43, 43, 43, 45],
        logprobs: [-0.1, -0.1, -0.1, -2],
        judgements: [1, 1, 1, -1],
      },
      // O = 1, S = [+1, ?, ?, ?]: raw [2, -3, -3, -3]: mean -1.75, deviations [3.75, -1.25 x3], std 2.5
      {
        prompt: Int32Array.from([4]),
        outcome: 1,
        tokens: [43, 7, 8, 9],
        logprobs: [-5, -5, -5, -5],
        judgements: [1, 0, 0, 0],
      },
    ])
    assert.equal(batch.steps, 2)
    assert.equal(batch.m, 4)
    assert.deepEqual([...batch.tokens], [43, 43, 43, 45, 43, 7, 8, 9])
    close(batch.behaviorLogprobs, [-0.1, -0.1, -0.1, -2, -5, -5, -5, -5])
    close(batch.rewards, [-0.5, -0.5, -0.5, 0.5, 2, -3, -3, -3])
    const s = 2.5 + 1e-6
    close(batch.advantages, [
      -0.25 / (0.5 + 1e-6),
      -0.25 / (0.5 + 1e-6),
      -0.25 / (0.5 + 1e-6),
      0.75 / (0.5 + 1e-6),
      3.75 / s,
      -1.25 / s,
      -1.25 / s,
      -1.25 / s,
    ])
    assert.equal(metrics['reward_model/unparseable_frac'], 3 / 8)
    assert.equal(metrics['reward_model/consistency_mean'], (-1.5 + 0.5 + 2 - 9) / 8)
    assert.throws(() => buildRewardModelBatch([]), ConfigError)
    // A task reward outside [0, 1] cannot be signed: named in a ConfigError.
    assert.throws(
      () =>
        buildRewardModelBatch([
          { prompt: Int32Array.from([1]), outcome: -1, tokens: [43], logprobs: [-1], judgements: [1] },
        ]),
      (e: unknown) => e instanceof ConfigError && e.field === 'outcome',
    )
    assert.throws(
      () =>
        buildRewardModelBatch([
          { prompt: Int32Array.from([1]), outcome: 0, tokens: [1], logprobs: [], judgements: [0] },
        ]),
      ConfigError,
    )
  })

  it('switch - trainRewardModel off leaves the weights as they were, and the metrics say so', async () => {
    const rm = new RewardModel({ config, seed: 5, prompt })
    const steps = compassBatch(4, 1).map((e) => e.step)
    const j = await rm.judge(steps, 4, 2)
    const { batch } = buildRewardModelBatch(
      steps.map((_, k) => ({
        prompt: j.prompts[k]!,
        outcome: 1,
        tokens: j.tokens.slice(k * 4, k * 4 + 4),
        logprobs: j.logprobs.slice(k * 4, k * 4 + 4),
        judgements: Int8Array.from([1, 0, 0, 0]), // forced mixed judgements: non-zero advantages
      })),
    )
    const before = await rm.getWeights()
    const optimizer = new AdamW(rm.model.params)
    const off = await trainRewardModelStep({ model: rm.model, optimizer, lr: 1e-2 }, batch, {
      ...TRIAD_SWITCHES_DEFAULTS,
      trainRewardModel: false,
    })
    assert.deepEqual(off, { 'triad/switch/train_reward_model': 0, 'reward_model/updates': 0 })
    assert.deepEqual((await rm.getWeights()).embed, before.embed)
    const on = await trainRewardModelStep(
      { model: rm.model, optimizer, lr: 1e-2 },
      batch,
      TRIAD_SWITCHES_DEFAULTS,
    )
    assert.equal(on['reward_model/updates'], 1)
    assert.equal(on['triad/switch/train_reward_model'], 1)
    assert.ok(on['reward_model/grad_norm']! > 0)
    assert.notDeepEqual((await rm.getWeights()).embed, before.embed)
    optimizer.dispose()
    rm.dispose()
  })

  it('micro-batches - splitting the steps into passes of few tokens gives the same update and metrics as one pass', async () => {
    const steps = compassBatch(6, 3).map((e) => e.step)
    const judge = new RewardModel({ config, seed: 9, prompt })
    const j = await judge.judge(steps, 4, 2)
    judge.dispose()
    const { batch } = buildRewardModelBatch(
      steps.map((_, k) => ({
        prompt: j.prompts[k]!,
        outcome: k % 2 === 0 ? 1 : 0,
        tokens: j.tokens.slice(k * 4, k * 4 + 4),
        logprobs: j.logprobs.slice(k * 4, k * 4 + 4),
        judgements: Int8Array.from([1, -1, k % 3 === 0 ? 0 : 1, -1]), // mixed: non-zero advantages
      })),
    )
    const width = Math.max(...batch.prompts.map((p) => p.length))
    const run = async (microBatchTokens: number) => {
      const rm = new RewardModel({ config, seed: 5, prompt })
      const optimizer = new AdamW(rm.model.params)
      const metrics = await trainRewardModelStep(
        { model: rm.model, optimizer, lr: 1e-2 },
        batch,
        { ...TRIAD_SWITCHES_DEFAULTS, trainRewardModel: true },
        { ...REWARD_MODEL_STEP_DEFAULTS, verdictEntropyCoef: 0.1, microBatchTokens },
      )
      const weights = await rm.getWeights()
      optimizer.dispose()
      rm.dispose()
      return { metrics, weights }
    }
    const whole = await run(1_000_000)
    const split = await run(width) // one step per pass: 6 passes
    for (const [k, v] of metricEntries(whole.metrics))
      assert.ok(
        Math.abs(split.metrics[k]! - v) <= 1e-5 * Math.max(1, Math.abs(v)),
        `${k}: ${split.metrics[k]} vs ${v}`,
      )
    for (const name of ['embed', 'layers.0.qkv', 'final_norm'])
      close(split.weights[name]!, Array.from(whole.weights[name]!), 1e-5)
  })

  it('learning - from random weights, step accuracy on a fixed labelled set rises under the consistency reward (seeded)', async () => {
    // Seeds: weights 1, training batches 100+it, verdict sampling 1000+it. AdamW lr 1e-2 (its defaults otherwise), 16 steps x m 16
    // per update, verdict-entropy bonus 0.2 (see REWARD_MODEL_STEP_DEFAULTS.verdictEntropyCoef).
    const rm = new RewardModel({ config, seed: 1, prompt })
    const optimizer = new AdamW(rm.model.params)
    const evalSet = compassEvalSet()
    const evalPrompts = rm.renderPrompts(evalSet.map((e) => e.step))
    const labels = evalSet.map((e) => e.label)
    const accuracy = async () => judgementAccuracy(await rm.greedyVerdicts(evalPrompts), 1, labels)!
    const curve: number[] = [await accuracy()]
    const unparseable: number[] = []
    const m = 16
    for (let it = 0; it < 60; it++) {
      const episodes = compassBatch(16, 100 + it)
      const j = await rm.judge(
        episodes.map((e) => e.step),
        m,
        1000 + it,
      )
      const { batch, metrics } = buildRewardModelBatch(
        episodes.map((e, k) => ({
          prompt: j.prompts[k]!,
          outcome: e.outcome,
          tokens: j.tokens.subarray(k * m, (k + 1) * m),
          logprobs: j.logprobs.subarray(k * m, (k + 1) * m),
          judgements: j.judgements.subarray(k * m, (k + 1) * m),
        })),
      )
      unparseable.push(metrics['reward_model/unparseable_frac']!)
      await trainRewardModelStep({ model: rm.model, optimizer, lr: 1e-2 }, batch, TRIAD_SWITCHES_DEFAULTS, {
        ...REWARD_MODEL_STEP_DEFAULTS,
        verdictEntropyCoef: 0.2,
      })
      rm.version = it + 1
      if (it % 10 === 9) curve.push(await accuracy())
    }
    // Random weights: the greedy token is no verdict at all (accuracy 0). Measured curve every 10
    // updates: 0, 0.5, 0.5, 0.5, 0.5, 1, 1 (unparseable 0.99 at the start). After 60 updates: every
    // step of the labelled set judged right, and nearly every sampled judgement parses.
    assert.equal(curve[0], 0, `curve ${curve}`)
    assert.ok(unparseable[0]! > 0.9, `unparseable ${unparseable[0]}`)
    assert.ok(curve.at(-1)! >= 0.875, `accuracy curve every 10 updates: ${curve}`)
    assert.ok(unparseable.at(-1)! < 0.05)
    optimizer.dispose()
    rm.dispose()
  })
})
