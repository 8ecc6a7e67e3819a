import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { createTransformer, disposeTransformer, type Transformer, tokenLogprobs } from '../../gpu/index.ts'
import { tapeGradients } from '../../gpu/tape-gradients.ts'
import { useTestBackend } from '../support/test-backend.ts'

const CONFIG = {
  layers: 2,
  width: 16,
  heads: 4,
  kvHeads: 2,
  headDim: 8,
  mlpHidden: 24,
  vocabSize: 40,
  contextLength: 32,
  qkvBias: true,
  qkNorm: true,
  tiedEmbeddings: false,
}
const IDS = [
  [3, 17, 0, 39, 8, 8, 21, 5, 30, 12, 2],
  [9, 1, 1, 33, 4, 27, 6, 18, 2, 0, 11],
]

/** The mean next-token negative log-likelihood of `IDS` (a scalar built from the model's parameters). */
function lossOf(model: Transformer): () => tf.Scalar {
  const tokens = tf.tensor2d(
    IDS.map((r) => r.slice(0, -1)),
    undefined,
    'int32',
  )
  const targets = tf.tensor2d(
    IDS.map((r) => r.slice(1)),
    undefined,
    'int32',
  )
  return () => tf.neg(tf.mean(tokenLogprobs(model, tokens, targets))) as tf.Scalar
}

/** `tf.variableGrads` and `tapeGradients` of the same loss, as plain arrays by variable name. */
function bothGradients(model: Transformer) {
  const loss = lossOf(model)
  const vars = [...model.params.values()]
  const reference = tf.variableGrads(loss, vars)
  const frugal = tapeGradients(loss, vars)
  const read = (g: Record<string, tf.Tensor>) =>
    Object.fromEntries(Object.entries(g).map(([name, t]) => [name, Array.from(t.dataSync())]))
  const out = {
    reference: { value: reference.value.dataSync()[0]!, grads: read(reference.grads) },
    frugal: { value: frugal.value.dataSync()[0]!, grads: read(frugal.grads) },
  }
  tf.dispose([reference.value, frugal.value, reference.grads, frugal.grads])
  return out
}

describe('tapeGradients (reverse mode that frees as it goes)', () => {
  before(async () => {
    await useTestBackend()
  })

  for (const lora of [undefined, { rank: 4, alpha: 8 }]) {
    it(`gives exactly tf.variableGrads' value and gradients (${lora ? 'LoRA adapters' : 'every weight'})`, () => {
      const model = createTransformer(CONFIG, { seed: 3, lora })
      try {
        const { reference, frugal } = bothGradients(model)
        assert.equal(frugal.value, reference.value)
        assert.deepEqual(Object.keys(frugal.grads).sort(), Object.keys(reference.grads).sort())
        assert.equal(Object.keys(frugal.grads).length, model.params.size)
        for (const name of Object.keys(reference.grads))
          assert.deepEqual(frugal.grads[name], reference.grads[name], `gradient of ${name}`)
      } finally {
        disposeTransformer(model)
      }
    })
  }

  it('leaves no tensor behind but the value and the gradients', () => {
    const model = createTransformer(CONFIG, { seed: 5 })
    try {
      const loss = lossOf(model)
      const before = tf.memory().numTensors
      const { value, grads } = tapeGradients(loss, [...model.params.values()])
      // the value and one gradient per parameter
      assert.equal(tf.memory().numTensors, before + 1 + model.params.size)
      tf.dispose([value, grads])
    } finally {
      disposeTransformer(model)
    }
  })

  it('holds fewer bytes at its peak than tf.variableGrads on the same loss', async () => {
    const model = createTransformer(CONFIG, { seed: 7 })
    try {
      const loss = lossOf(model)
      const vars = [...model.params.values()]
      const peakOf = async (f: () => { value: tf.Tensor; grads: Record<string, tf.Tensor> }) => {
        const info = await tf.profile(() => {
          const { value, grads } = f()
          tf.dispose([value, grads])
          return []
        })
        return info.peakBytes
      }
      const reference = await peakOf(() => tf.variableGrads(loss, vars))
      const frugal = await peakOf(() => tapeGradients(loss, vars))
      assert.ok(frugal < reference, `peak ${frugal} bytes, tf.variableGrads ${reference}`)
    } finally {
      disposeTransformer(model)
    }
  })

  it('refuses a value that is not a scalar, and one built from none of the variables', () => {
    const v = tf.variable(tf.ones([3]))
    const other = tf.variable(tf.ones([2]))
    try {
      assert.throws(
        () => tapeGradients(() => tf.mul(v, 2) as unknown as tf.Scalar, [v]),
        /must return a scalar tensor, got shape \[3\]/,
      )
      assert.throws(() => tapeGradients(() => tf.sum(other), [v]), /no recorded op leads from the variables/)
      assert.throws(() => tapeGradients(() => tf.sum(v), []), /no variables/)
      // a refused call leaves nothing behind and the next one works
      const before = tf.memory().numTensors
      assert.throws(() => tapeGradients(() => tf.mul(v, 2) as unknown as tf.Scalar, [v]))
      assert.equal(tf.memory().numTensors, before)
      const { value, grads } = tapeGradients(() => tf.sum(tf.mul(v, v)), [v])
      assert.deepEqual(Array.from(grads[v.name]!.dataSync()), [2, 2, 2])
      tf.dispose([value, grads])
    } finally {
      tf.dispose([v, other])
    }
  })
})
