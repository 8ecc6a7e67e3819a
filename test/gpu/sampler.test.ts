import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  ConfigError,
  createRng,
  createTransformer,
  disposeTransformer,
  generate,
  initWeights,
  ShapeError,
  type Transformer,
  type TransformerConfig,
  tokenLogprobs,
} from '../../gpu/index.ts'
import { useTestBackend } from '../support/test-backend.ts'

const config: TransformerConfig = { layers: 2, width: 16, heads: 2, contextLength: 32, vocabSize: 13 }
const prompts = [
  [1, 2, 3, 4, 5, 6, 7],
  [8, 9],
  [3, 1, 4, 1, 5],
]

/** Full-forward log-probabilities of `tokens[from..]` given their prefix, one unpadded sequence. */
async function referenceLogprobs(model: Transformer, seq: number[], from: number, temperature = 1) {
  const inputs = tf.tensor2d([seq.slice(0, -1)], [1, seq.length - 1], 'int32')
  const targets = tf.tensor2d([seq.slice(1)], [1, seq.length - 1], 'int32')
  const lp = tokenLogprobs(model, inputs, targets, { temperature })
  const data = Array.from((await lp.data()) as Float32Array).slice(from - 1)
  tf.dispose([inputs, targets, lp])
  return data
}

describe('gpu/sampler', () => {
  let model: Transformer
  before(async () => {
    await useTestBackend()
    // A wider spread than the default init, so the distribution is far from uniform.
    const w = initWeights(config, 7)
    const rng = createRng(8)
    for (const [name, data] of Object.entries(w))
      if (!name.endsWith('norm')) for (let i = 0; i < data.length; i++) data[i] = 0.3 * rng.normal()
    model = createTransformer(config, { weights: w })
  })
  after(() => disposeTransformer(model))

  it('sampler - log-probabilities equal a full forward pass over the same tokens', async () => {
    for (const temperature of [1, 0.7]) {
      const gens = await generate(model, prompts, { maxNewTokens: 9, temperature, seed: 3 })
      for (let i = 0; i < prompts.length; i++) {
        const g = gens[i]!
        assert.equal(g.tokens.length, 9)
        assert.equal(g.finishReason, 'length')
        const ref = await referenceLogprobs(
          model,
          [...prompts[i]!, ...g.tokens],
          prompts[i]!.length,
          temperature,
        )
        for (let k = 0; k < 9; k++)
          assert.ok(Math.abs(g.logprobs[k]! - ref[k]!) < 1e-4, `T=${temperature} seq ${i} token ${k}`)
      }
    }
  })

  it('sampler - greedy with the cache equals greedy without it, token for token', async () => {
    const cached = await generate(model, prompts, { maxNewTokens: 12, temperature: 0 })
    const plain = await generate(model, prompts, { maxNewTokens: 12, temperature: 0, useCache: false })
    for (let i = 0; i < prompts.length; i++) {
      assert.deepEqual([...cached[i]!.tokens], [...plain[i]!.tokens])
      for (let k = 0; k < 12; k++)
        assert.ok(Math.abs(cached[i]!.logprobs[k]! - plain[i]!.logprobs[k]!) < 1e-4)
    }
    // Greedy log-probabilities are the model's own (temperature 1).
    const ref = await referenceLogprobs(model, [...prompts[1]!, ...cached[1]!.tokens], 2)
    for (let k = 0; k < 12; k++) assert.ok(Math.abs(cached[1]!.logprobs[k]! - ref[k]!) < 1e-4)
  })

  it('sampler - a sequence in a ragged batch gets what it gets alone', async () => {
    const batch = await generate(model, prompts, { maxNewTokens: 6, temperature: 0 })
    const alone = await generate(model, [prompts[1]!], { maxNewTokens: 6, temperature: 0 })
    assert.deepEqual([...batch[1]!.tokens], [...alone[0]!.tokens])
  })

  it('sampler - the same seed gives the same tokens, another seed others', async () => {
    const a = await generate(model, prompts, { maxNewTokens: 10, seed: 11 })
    const b = await generate(model, prompts, { maxNewTokens: 10, seed: 11 })
    const c = await generate(model, prompts, { maxNewTokens: 10, seed: 12 })
    assert.deepEqual(
      a.map((g) => [...g.tokens]),
      b.map((g) => [...g.tokens]),
    )
    assert.notDeepEqual(
      a.map((g) => [...g.tokens]),
      c.map((g) => [...g.tokens]),
    )
  })

  it('sampler - stop tokens end a sequence and are kept', async () => {
    const free = await generate(model, [prompts[0]!], { maxNewTokens: 10, temperature: 0 })
    const stopAt = free[0]!.tokens[3]!
    const first = free[0]!.tokens.indexOf(stopAt)
    const [g] = await generate(model, [prompts[0]!], {
      maxNewTokens: 10,
      temperature: 0,
      stopTokens: [stopAt],
    })
    assert.equal(g!.finishReason, 'stop')
    assert.deepEqual([...g!.tokens], [...free[0]!.tokens.slice(0, first + 1)])
    assert.equal(g!.logprobs.length, first + 1)
  })

  it('sampler - top-p keeps only the nucleus', async () => {
    // With a tiny top-p only the most likely token survives: it is greedy, with log-probability 0.
    const [g] = await generate(model, [prompts[2]!], { maxNewTokens: 8, top_p: 1e-6, seed: 5 })
    const [greedy] = await generate(model, [prompts[2]!], { maxNewTokens: 8, temperature: 0 })
    assert.deepEqual([...g!.tokens], [...greedy!.tokens])
    assert.deepEqual([...g!.logprobs], new Array(8).fill(0))
  })

  it('sampler - generation stops at the context length', async () => {
    const [g] = await generate(model, [new Array(30).fill(1)], { maxNewTokens: 10, temperature: 0 })
    assert.equal(g!.tokens.length, 2)
    assert.equal(g!.finishReason, 'length')
  })

  it('sampler - bad settings and prompts are rejected', async () => {
    await assert.rejects(generate(model, prompts, { maxNewTokens: 0 }), ConfigError)
    await assert.rejects(generate(model, prompts, { maxNewTokens: 4, top_p: 0 }), ConfigError)
    await assert.rejects(generate(model, prompts, { maxNewTokens: 4, temperature: -1 }), ConfigError)
    await assert.rejects(generate(model, [[]], { maxNewTokens: 4 }), ShapeError)
    await assert.rejects(generate(model, [[1, 13]], { maxNewTokens: 4 }), /ids in \[0, 13\)/)
    await assert.rejects(generate(model, [new Array(32).fill(1)], { maxNewTokens: 4 }), ShapeError)
  })

  it('sampler - generation leaks no tensors', async () => {
    await generate(model, prompts, { maxNewTokens: 3 })
    const before = tf.memory().numTensors
    await generate(model, prompts, { maxNewTokens: 5 })
    await generate(model, prompts, { maxNewTokens: 5, useCache: false })
    assert.equal(tf.memory().numTensors, before)
  })
})
