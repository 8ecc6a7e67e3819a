import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { RewardModel, verdictOf } from '../../../actors/triad/index.ts'
import { ConfigError, ShapeError, tokenLogprobs } from '../../../gpu/index.ts'
import type { JudgeStep } from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const config = { layers: 1, width: 16, heads: 2, contextLength: 64, vocabSize: 264 }
const step = (goal: string, move: string): JudgeStep => ({
  task: 'compass',
  history: [{ role: 'user', content: `goal ${goal}` }],
  step: { role: 'assistant', content: `go ${move}` },
})
const steps = [step('N', 'N'), step('S', 'E'), step('W', 'W')]

describe('actors/triad/reward-model', () => {
  let rm: RewardModel
  before(async () => {
    await useTestBackend()
    rm = new RewardModel({ config, seed: 3, prompt: { system: () => 'judge' } })
  })
  after(() => rm.dispose())

  it('judge - m verdicts per step, each with the log-probability of its token after the prompt', async () => {
    const r = await rm.judge(steps, 5, 11)
    assert.equal(r.m, 5)
    assert.equal(r.tokens.length, 15)
    assert.equal(r.version, 0)
    for (let k = 0; k < 15; k++) assert.equal(r.judgements[k], verdictOf(r.tokens[k]!))
    // Each logprob equals the full-forward log-probability of the token after its (unpadded) prompt.
    for (let j = 0; j < steps.length; j++) {
      const p = r.prompts[j]!
      const seq = [...p, r.tokens[j * 5]!]
      const lp = tf.tidy(() =>
        tokenLogprobs(
          rm.model,
          tf.tensor2d([seq.slice(0, -1)], [1, seq.length - 1], 'int32'),
          tf.tensor2d([seq.slice(1)], [1, seq.length - 1], 'int32'),
        ).dataSync(),
      )
      assert.ok(Math.abs(lp[lp.length - 1]! - r.logprobs[j * 5]!) < 1e-4, `step ${j}`)
    }
    // Same seed, same verdicts; another seed, other draws.
    const again = await rm.judge(steps, 5, 11)
    assert.deepEqual([...again.tokens], [...r.tokens])
    const other = await rm.judge(steps, 5, 12)
    assert.notDeepEqual([...other.tokens], [...r.tokens])
  })

  it('judge - batched last-token logits equal the ones of each prompt alone', async () => {
    const prompts = rm.renderPrompts(steps)
    assert.notEqual(prompts[0]!.length, prompts[1]!.length + 100) // lengths may differ; padding is masked
    const batched = await rm.lastLogits(prompts)
    for (let j = 0; j < prompts.length; j++) {
      const [alone] = await rm.lastLogits([prompts[j]!])
      for (let v = 0; v < config.vocabSize; v++) assert.ok(Math.abs(alone![v]! - batched[j]![v]!) < 1e-4)
    }
  })

  it('judge - passes bounded by maxPassTokens give the logits of one pass', async () => {
    const prompts = rm.renderPrompts([...steps, ...steps])
    const one = await rm.lastLogits(prompts)
    const small = new RewardModel({
      config,
      weights: await rm.getWeights(),
      prompt: { system: () => 'judge' },
      maxPassTokens: 1, // one prompt per pass
    })
    const split = await small.lastLogits(prompts)
    small.dispose()
    assert.equal(split.length, prompts.length)
    for (let j = 0; j < prompts.length; j++)
      for (let v = 0; v < config.vocabSize; v++) assert.ok(Math.abs(one[j]![v]! - split[j]![v]!) < 1e-4)
    assert.throws(
      () => new RewardModel({ config, maxPassTokens: 0 }),
      (e: unknown) => e instanceof ConfigError && /maxPassTokens/.test(e.message),
    )
  })

  it('weights - get and load round-trip with the version; bad weights and settings are errors', async () => {
    const w = await rm.getWeights()
    const other = new RewardModel({ config, seed: 99, prompt: { system: () => 'judge' } })
    const before = await other.judge(steps, 4, 1)
    other.loadWeights(w, 7)
    const after = await other.judge(steps, 4, 1)
    const mine = await rm.judge(steps, 4, 1)
    assert.equal(after.version, 7)
    assert.deepEqual([...after.logprobs], [...mine.logprobs])
    assert.notDeepEqual([...before.logprobs], [...mine.logprobs])
    assert.throws(() => other.loadWeights({ ...w, embed: new Float32Array(3) }, 8), ShapeError)
    assert.equal(other.version, 7)
    other.dispose()
    assert.throws(() => new RewardModel({ config: { ...config, vocabSize: 10 } }), ConfigError)
    assert.throws(() => new RewardModel({ config, temperature: 0 }), /temperature=0: must be > 0/)
    await assert.rejects(rm.judge(steps, 0, 1), ConfigError)
  })
})
