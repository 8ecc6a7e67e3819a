import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  createRng,
  createTransformer,
  disposeTransformer,
  fullConfig,
  initWeights,
  parameterBytes,
  type TransformerConfig,
  tokenLogprobs,
} from '../../gpu/index.ts'
import { forward, paramShapes, tokenStatsAt } from '../../gpu/testing.ts'
import { useTestBackend } from '../support/test-backend.ts'

/**
 * The pretrained-model features of the one transformer (grouped-query attention, a head size apart
 * from the width, q/k/v biases, q/k norms, an untied head, llama3 rope scaling), all on at once:
 * analytic gradients against finite differences, and per-head against batched attention (the
 * grouped path of each).
 */
const variant: TransformerConfig = {
  layers: 1,
  width: 8,
  heads: 4,
  kvHeads: 2,
  headDim: 6,
  mlpHidden: 12,
  contextLength: 80,
  vocabSize: 11,
  qkvBias: true,
  qkNorm: true,
  tiedEmbeddings: false,
  ropeScaling: { type: 'llama3', factor: 4, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 16 },
}

function spread(seed: number): Record<string, Float32Array> {
  const w = initWeights(variant, seed)
  const rng = createRng(seed + 1)
  for (const [name, data] of Object.entries(w))
    for (let k = 0; k < data.length; k++)
      data[k] = name.endsWith('norm') ? 1 + 0.2 * rng.normal() : 0.4 * rng.normal() // large enough to matter
  return w
}

describe('gpu/transformer variants', () => {
  before(async () => {
    await useTestBackend()
  })

  it('parameters: biases start at 0, the untied head and q/k norms exist with their shapes', () => {
    const full = fullConfig(variant)
    const shapes = new Map(paramShapes(full))
    assert.deepEqual(shapes.get('layers.0.qkv'), [8, (4 + 2 * 2) * 6])
    assert.deepEqual(shapes.get('layers.0.qkv_bias'), [48])
    assert.deepEqual(shapes.get('layers.0.q_norm'), [6])
    assert.deepEqual(shapes.get('layers.0.attn_out'), [24, 8])
    assert.deepEqual(shapes.get('lm_head'), [11, 8])
    const w = initWeights(variant, 0)
    assert.ok(w['layers.0.qkv_bias']!.every((v) => v === 0))
    assert.ok(w['layers.0.k_norm']!.every((v) => v === 1))
    assert.throws(() => fullConfig({ ...variant, kvHeads: 3 }), /kvHeads=3: must divide heads \(4\)/)
    assert.throws(() => fullConfig({ ...variant, headDim: 5 }), /headDim=5: must be even/)
  })

  it('per-head and batched grouped-query attention agree', async () => {
    const model = createTransformer(variant, { weights: spread(3) })
    const rng = createRng(2)
    const row = () => Array.from({ length: 70 }, () => rng.int(11))
    const tokens = tf.tensor2d([row(), row()], [2, 70], 'int32')
    const targets = tf.tensor2d([row(), row()], [2, 70], 'int32')
    const mask = tf.tensor2d([new Array(70).fill(1), [0, 0, 0, ...new Array(67).fill(1)]])
    const a = await tokenLogprobs(model, tokens, targets, {
      attentionMask: mask,
      attention: 'per-head',
    }).data()
    const b = await tokenLogprobs(model, tokens, targets, {
      attentionMask: mask,
      attention: 'batched',
    }).data()
    let diff = 0
    for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!))
    assert.ok(diff < 1e-4, `max diff ${diff}`)
    tf.dispose([tokens, targets, mask])
    disposeTransformer(model)
  })

  it('one key/value head at batch 1: per-head attention takes gradients and agrees with batched', async () => {
    // Qwen3's smallest layouts and the tiny test models have num_key_value_heads 1: per-head
    // attention then has a single sequence-head, whose split (and its gradient) must still work.
    const one: TransformerConfig = { ...variant, kvHeads: 1 }
    const weights = initWeights(one, 4)
    const model = createTransformer(one, { weights })
    const rng = createRng(6)
    const row = () => Array.from({ length: 70 }, () => rng.int(11))
    const tokens = tf.tensor2d([row()], [1, 70], 'int32')
    const targets = tf.tensor2d([row()], [1, 70], 'int32')
    const per = () => tf.sum(tokenLogprobs(model, tokens, targets, { attention: 'per-head' })) as tf.Scalar
    const batched = () => tf.sum(tokenLogprobs(model, tokens, targets, { attention: 'batched' })) as tf.Scalar
    const a = tf.variableGrads(per, [...model.params.values()])
    const b = tf.variableGrads(batched, [...model.params.values()])
    assert.ok(Math.abs(a.value.dataSync()[0]! - b.value.dataSync()[0]!) < 1e-3)
    for (const name of Object.keys(b.grads)) {
      const ga = a.grads[name]!.dataSync()
      const gb = b.grads[name]!.dataSync()
      let diff = 0
      for (let i = 0; i < gb.length; i++) diff = Math.max(diff, Math.abs(ga[i]! - gb[i]!))
      assert.ok(diff < 1e-3, `${name}: max gradient diff ${diff}`)
    }
    tf.dispose([a.value, b.value, a.grads, b.grads, tokens, targets])
    disposeTransformer(model)
  })

  it('tokenStatsAt: log-probabilities and entropies at chosen positions, 0 elsewhere, with the masked gradients', async () => {
    const model = createTransformer(variant, { weights: spread(8) })
    const rng = createRng(3)
    const row = () => Array.from({ length: 9 }, () => rng.int(11))
    const tokens = tf.tensor2d([row(), row()], [2, 9], 'int32')
    const targets = tf.tensor2d([row(), row()], [2, 9], 'int32')
    const positions = Int32Array.from([2, 3, 8, 12, 17])
    const mask = tf.tensor2d(
      Array.from({ length: 18 }, (_, i) => (positions.includes(i) ? 1 : 0)),
      [2, 9],
    )
    const full = tokenLogprobs(model, tokens, targets, { temperature: 0.7 }).dataSync()
    const at = tokenStatsAt(model, tokens, targets, positions, { temperature: 0.7, entropy: true })
    const lp = at.logp.dataSync()
    const ent = at.entropy!.dataSync()
    const logits = tf.div(forward(model, tokens), 0.7).reshape([18, 11]).logSoftmax()
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logits), logits), -1)).dataSync()
    for (let i = 0; i < 18; i++) {
      const chosen = positions.includes(i)
      assert.ok(Math.abs(lp[i]! - (chosen ? full[i]! : 0)) < 1e-5, `logp[${i}]`)
      assert.ok(Math.abs(ent[i]! - (chosen ? entropy[i]! : 0)) < 1e-5, `entropy[${i}]`)
    }
    const params = [...model.params.values()]
    const a = tf.variableGrads(
      () => tf.sum(tokenStatsAt(model, tokens, targets, positions).logp) as tf.Scalar,
      params,
    )
    const b = tf.variableGrads(
      () => tf.sum(tf.mul(tokenLogprobs(model, tokens, targets), mask)) as tf.Scalar,
      params,
    )
    for (const name of Object.keys(b.grads)) {
      const ga = a.grads[name]!.dataSync()
      const gb = b.grads[name]!.dataSync()
      let diff = 0
      for (let i = 0; i < gb.length; i++) diff = Math.max(diff, Math.abs(ga[i]! - gb[i]!))
      assert.ok(diff < 1e-4, `${name}: max gradient diff ${diff}`)
    }
    assert.throws(() => tokenStatsAt(model, tokens, targets, Int32Array.from([18])), /positions/)
    tf.dispose([a.value, b.value, a.grads, b.grads, at.logp, at.entropy!, logits, tokens, targets, mask])
    disposeTransformer(model)
  })

  for (const attention of ['batched', 'per-head'] as const) {
    it(`${attention}: analytic gradients match finite differences for every parameter`, async () => {
      const weights = spread(5)
      const model = createTransformer(variant, { weights })
      const tokens = tf.tensor2d([[1, 4, 4, 9, 0, 7, 2, 10]], [1, 8], 'int32')
      const targets = tf.tensor2d([[4, 4, 9, 0, 7, 2, 10, 3]], [1, 8], 'int32')
      const loss = () => tf.sum(tokenLogprobs(model, tokens, targets, { attention })) as tf.Scalar
      const { grads, value } = tf.variableGrads(loss, [...model.params.values()])
      value.dispose()
      const rng = createRng(9)
      const eps = 1e-2
      for (const [name, variable] of model.params) {
        const g = (await grads[variable.name]!.data()) as Float32Array
        const base = weights[name]!
        // the embedding: row 4 (twice in the input) plus random entries
        const picks =
          name === 'embed'
            ? [4 * 8, 4 * 8 + 3, rng.int(base.length)]
            : [rng.int(base.length), rng.int(base.length)]
        for (const idx of picks) {
          const at = (delta: number) => {
            const w = base.slice()
            w[idx] = w[idx]! + delta
            tf.tidy(() => variable.assign(tf.tensor(w, variable.shape)))
            return tf.tidy(() => loss().dataSync()[0]!)
          }
          const numeric = (at(eps) - at(-eps)) / (2 * eps)
          tf.tidy(() => variable.assign(tf.tensor(base, variable.shape)))
          assert.ok(
            Math.abs(numeric - g[idx]!) < 3e-3 + 3e-2 * Math.abs(numeric),
            `${name}[${idx}]: analytic ${g[idx]} numeric ${numeric}`,
          )
        }
      }
      tf.dispose(grads)
      tf.dispose([tokens, targets])
      disposeTransformer(model)
    })
  }

  it('a large output head (151,936 x 112) gives the same logits on the decoding path (few rows) as on the wide one', async () => {
    const model = createTransformer(
      { layers: 1, width: 112, heads: 2, contextLength: 16, vocabSize: 151936 },
      { seed: 3 },
    )
    const ids = [5, 151935, 77, 1000, 2, 9, 40000, 3, 8, 150000]
    const tokens = tf.tensor2d([ids], [1, 10], 'int32')
    const wide = forward(model, tokens) // 10 rows: explicit transpose
    const last = forward(model, tokens, { lastOnly: true }) // 1 row: the transpose-flag matmul
    const a = (await wide.data()).subarray(9 * 151936)
    const b = await last.data()
    let diff = 0
    for (let i = 0; i < b.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!))
    assert.ok(diff < 1e-5, `max diff ${diff}`)
    tf.dispose([tokens, wide, last])
    disposeTransformer(model)
  })

  it('a model holds its parameters once on the backend (float32 bytes plus the rotary tables)', () => {
    const before = tf.memory().numBytes
    const model = createTransformer(variant, { seed: 1 })
    const full = fullConfig(variant)
    const rope = 2 * 4 * full.contextLength * full.headDim + 4 * full.headDim * full.headDim
    assert.equal(tf.memory().numBytes - before, parameterBytes(variant) + rope)
    disposeTransformer(model)
    assert.equal(tf.memory().numBytes, before)
  })
})
