import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  ConfigError,
  createRng,
  createTransformer,
  disposeTransformer,
  initWeights,
  parameterCount,
  ShapeError,
  type TransformerConfig,
  tokenLogprobs,
} from '../../gpu/index.ts'
import { forward } from '../../gpu/testing.ts'
import { useTestBackend } from '../support/test-backend.ts'

const tiny: TransformerConfig = {
  layers: 2,
  width: 8,
  heads: 2,
  contextLength: 8,
  vocabSize: 11,
  mlpHidden: 12,
}

/** Weights with a larger spread than the default init, so gradients are far from zero. */
function spreadWeights(seed: number): Record<string, Float32Array> {
  const w = initWeights(tiny, seed)
  const rng = createRng(seed + 1)
  for (const [name, data] of Object.entries(w))
    for (let i = 0; i < data.length; i++)
      data[i] = name.endsWith('norm') ? 1 + 0.3 * rng.normal() : 0.4 * rng.normal()
  return w
}

describe('gpu/transformer', () => {
  before(async () => {
    await useTestBackend()
  })

  it('transformer - parameter count and shapes follow the config', () => {
    // embed 11*8 + 2 layers * (8 + 8*24 + 8*8 + 8 + 8*24 + 12*8) + 8
    assert.equal(parameterCount(tiny), 88 + 2 * (8 + 192 + 64 + 8 + 192 + 96) + 8)
    const model = createTransformer(tiny, { seed: 1 })
    assert.deepEqual(model.params.get('layers.1.gate_up')!.shape, [8, 24])
    const logits = forward(model, tf.tensor2d([[1, 2, 3]], [1, 3], 'int32'))
    assert.deepEqual(logits.shape, [1, 3, 11])
    logits.dispose()
    disposeTransformer(model)
  })

  it('transformer - bad configs and inputs are rejected with clear errors', () => {
    assert.throws(() => createTransformer({ ...tiny, width: 9 }), ConfigError)
    assert.throws(() => createTransformer({ ...tiny, heads: 8 }), /head size\) must be even/)
    assert.throws(() => createTransformer({ ...tiny, layers: 0 }), ConfigError)
    assert.throws(() => createTransformer(tiny, { weights: { embed: new Float32Array(3) } }), ShapeError)
    const model = createTransformer(tiny, { seed: 1 })
    const long = tf.zeros([1, 9], 'int32') as tf.Tensor2D
    assert.throws(() => forward(model, long), /contextLength/)
    assert.throws(() => tokenLogprobs(model, long, tf.zeros([1, 3], 'int32') as tf.Tensor2D), ShapeError)
    long.dispose()
    disposeTransformer(model)
  })

  it('transformer - a causal model: changing a later token leaves earlier logits unchanged', async () => {
    const model = createTransformer(tiny, { weights: spreadWeights(3) })
    const a = forward(model, tf.tensor2d([[1, 2, 3, 4]], [1, 4], 'int32'))
    const b = forward(model, tf.tensor2d([[1, 2, 3, 9]], [1, 4], 'int32'))
    const da = (await a.data()) as Float32Array
    const db = (await b.data()) as Float32Array
    assert.deepEqual([...da.slice(0, 33)], [...db.slice(0, 33)])
    assert.notDeepEqual([...da.slice(33)], [...db.slice(33)])
    tf.dispose([a, b])
    disposeTransformer(model)
  })

  it('transformer - log-probabilities equal log softmax of the logits at the targets', async () => {
    const model = createTransformer(tiny, { weights: spreadWeights(4) })
    const tokens = tf.tensor2d(
      [
        [1, 5, 7, 2],
        [3, 3, 10, 0],
      ],
      [2, 4],
      'int32',
    )
    const targets = tf.tensor2d(
      [
        [5, 7, 2, 4],
        [3, 10, 0, 1],
      ],
      [2, 4],
      'int32',
    )
    const lp = (await tokenLogprobs(model, tokens, targets, { temperature: 0.5 }).data()) as Float32Array
    const logits = (await forward(model, tokens).data()) as Float32Array
    const tg = [5, 7, 2, 4, 3, 10, 0, 1]
    for (let r = 0; r < 8; r++) {
      const row = Array.from(logits.slice(r * 11, r * 11 + 11), (z) => z / 0.5)
      const max = Math.max(...row)
      const lse = max + Math.log(row.reduce((s, z) => s + Math.exp(z - max), 0))
      assert.ok(Math.abs(lp[r]! - (row[tg[r]!]! - lse)) < 1e-5, `row ${r}`)
    }
    tf.dispose([tokens, targets])
    disposeTransformer(model)
  })

  for (const [label, seqLen, padded, attention] of [
    ['batched attention', 5, false, 'batched'],
    ['per-head attention with left padding', 17, true, 'per-head'],
  ] as const) {
    it(`transformer - gradients match central finite differences on a tiny config, ${label}`, async () => {
      const config = { ...tiny, contextLength: 32 }
      const weights = spreadWeights(5)
      const model = createTransformer(config, { weights })
      const rng0 = createRng(seqLen)
      const row = () => Array.from({ length: seqLen }, () => rng0.int(11))
      const tokens = tf.tensor2d([row(), row()], [2, seqLen], 'int32')
      const targets = tf.tensor2d([row(), row()], [2, seqLen], 'int32')
      // Padding rows carry no loss (as in training): a query that sees only masked keys has a
      // softmax whose float32 forward ignores its scores, so finite differences cannot see them.
      const coef = tf.tensor2d([
        row().map((x) => x / 5 - 1),
        row().map((x, i) => (padded && i < 3 ? 0 : 1 - x / 7)),
      ])
      // Row 1 is left-padded by 3 tokens: masked as keys, positions start at its first real token.
      const attentionMask = padded
        ? tf.tensor2d([new Array(seqLen).fill(1), [0, 0, 0, ...new Array(seqLen - 3).fill(1)]])
        : undefined
      const positions = padded
        ? tf.tensor2d(
            [
              Array.from({ length: seqLen }, (_, i) => i),
              Array.from({ length: seqLen }, (_, i) => Math.max(0, i - 3)),
            ],
            [2, seqLen],
            'int32',
          )
        : undefined
      // loss(theta) = sum_{b,t} coef[b,t] * log p(target | prefix)
      const loss = () =>
        tf.sum(
          tf.mul(tokenLogprobs(model, tokens, targets, { attentionMask, positions, attention }), coef),
        ) as tf.Scalar
      const vars = [...model.params.values()]
      const { grads, value } = tf.variableGrads(loss, vars)
      value.dispose()
      const rng = createRng(9)
      const eps = 1e-2
      let checked = 0
      for (const [name, variable] of model.params) {
        const g = (await grads[variable.name]!.data()) as Float32Array
        const base = weights[name]!
        for (let k = 0; k < 3; k++) {
          const idx = rng.int(base.length)
          const at = (delta: number) => {
            const w = base.slice()
            w[idx] = w[idx]! + delta
            tf.tidy(() => variable.assign(tf.tensor(w, variable.shape)))
            return tf.tidy(() => loss().dataSync()[0]!)
          }
          const numeric = (at(eps) - at(-eps)) / (2 * eps) // (f(x+e) - f(x-e)) / 2e
          tf.tidy(() => variable.assign(tf.tensor(base, variable.shape)))
          const diff = Math.abs(numeric - g[idx]!)
          assert.ok(
            diff < 2e-3 + 2e-2 * Math.abs(numeric),
            `${name}[${idx}]: analytic ${g[idx]} numeric ${numeric}`,
          )
          checked++
        }
      }
      assert.equal(checked, 3 * model.params.size)
      tf.dispose([tokens, targets, coef])
      if (attentionMask) tf.dispose([attentionMask, positions!])
      tf.dispose(grads)
      disposeTransformer(model)
    })
  }

  it('transformer - per-head and batched attention agree', async () => {
    const model = createTransformer({ ...tiny, contextLength: 32 }, { weights: spreadWeights(6) })
    const rng = createRng(2)
    const row = () => Array.from({ length: 20 }, () => rng.int(11))
    const tokens = tf.tensor2d([row(), row()], [2, 20], 'int32')
    const targets = tf.tensor2d([row(), row()], [2, 20], 'int32')
    const mask = tf.tensor2d([new Array(20).fill(1), [0, 0, ...new Array(18).fill(1)]])
    const a = await tokenLogprobs(model, tokens, targets, {
      attentionMask: mask,
      attention: 'per-head',
    }).data()
    const b = await tokenLogprobs(model, tokens, targets, {
      attentionMask: mask,
      attention: 'batched',
    }).data()
    for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) < 1e-5, `position ${i}`)
    tf.dispose([tokens, targets, mask])
    disposeTransformer(model)
  })

  it('transformer - a training step leaks no tensors', async () => {
    const model = createTransformer(tiny, { seed: 2 })
    const tokens = tf.tensor2d([[1, 5, 7, 2]], [1, 4], 'int32')
    const vars = [...model.params.values()]
    const step = () => {
      const { grads, value } = tf.variableGrads(
        () => tf.neg(tf.mean(tokenLogprobs(model, tokens, tokens))) as tf.Scalar,
        vars,
      )
      tf.tidy(() => {
        for (const v of vars) v.assign(tf.sub(v, tf.mul(grads[v.name]!, 0.1)))
      })
      tf.dispose(grads)
      value.dispose()
    }
    step() // warm-up: backends may cache constants on first use
    const before = tf.memory()
    step()
    const after = tf.memory()
    assert.equal(after.numTensors, before.numTensors)
    assert.equal(after.numBytes, before.numBytes)
    tokens.dispose()
    disposeTransformer(model)
  })
})
