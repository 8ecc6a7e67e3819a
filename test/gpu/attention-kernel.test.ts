import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend } from '../../gpu/backend.ts'
import { fusedAttention } from '../../gpu/fused-ops.ts'
import { maskedSoftmax } from '../../gpu/masked-softmax.ts'
import type { NativeBackend } from '../../gpu/native-backend.ts'
import { useTestBackend } from '../support/test-backend.ts'

// 2 sequences, 4 query heads over 2 key/value heads, 3 query steps, 7 keys of width 20 (a width
// that is not a multiple of the kernel's 16 lanes, so its scalar tail runs too)
const BATCH = 2
const HEADS = 4
const KV = 2
const T = 3
const KEYS = 7
const HD = 20
const GROUPS = BATCH * KV
const ROWS = (HEADS / KV) * T

/** An additive mask of `shape` with about a third of its entries blocked (-1e9), the last key always open. */
function randomMask(shape: [number, number, number, number], seed: number): tf.Tensor4D {
  return tf.tidy(() => {
    const open = tf.randomUniform(shape, 0, 1, 'float32', seed).greater(0.33).toFloat()
    const last = tf.concat(
      [tf.zeros([...shape.slice(0, 3), shape[3] - 1]), tf.ones([...shape.slice(0, 3), 1])],
      3,
    )
    return tf.mul(tf.sub(tf.maximum(open, last), 1), 1e9) as tf.Tensor4D
  })
}

/** The composed attention (two batched products and the masked softmax), the form with a gradient. */
function composed(q: tf.Tensor3D, k: tf.Tensor3D, v: tf.Tensor3D, mask: tf.Tensor4D): tf.Tensor3D {
  const scores = tf.matMul(q, k, false, true) as tf.Tensor3D
  return tf.matMul(maskedSoftmax(scores, mask, BATCH, HEADS), v) as tf.Tensor3D
}

describe('gpu/native attention kernel (TriadAttention, forward only)', () => {
  after(async () => {
    await useTestBackend()
  })

  for (const [what, maskShape] of [
    ['a causal mask shared by the batch', [1, 1, T, KEYS]],
    ['a mask per sequence', [BATCH, 1, T, KEYS]],
  ] as const) {
    it(`attention kernel - gives the composed attention's values to 1e-6 (${what})`, async () => {
      await chooseBackend({ backend: 'native', log: () => {} })
      const q = tf.randomNormal([GROUPS, ROWS, HD], 0, 1, 'float32', 1) as tf.Tensor3D
      const k = tf.randomNormal([GROUPS, KEYS, HD], 0, 1, 'float32', 2) as tf.Tensor3D
      const v = tf.randomNormal([GROUPS, KEYS, HD], 0, 1, 'float32', 3) as tf.Tensor3D
      const mask = randomMask([...maskShape], 4)
      const fused = fusedAttention(q, k, v, mask, KV)
      assert.ok(fused, 'the native engine runs the fused kernel while no tape records')
      const want = composed(q, k, v, mask).arraySync().flat(2)
      const got = fused.arraySync().flat(2)
      assert.equal(got.length, GROUPS * ROWS * HD)
      for (let i = 0; i < want.length; i++)
        assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-6, `element ${i}: fused ${got[i]}, composed ${want[i]}`)
      tf.dispose([q, k, v, mask, fused])
    })
  }

  it('attention kernel - is not taken while a tape records (the composed form has the gradient)', async () => {
    await chooseBackend({ backend: 'native', log: () => {} })
    const q = tf.variable(tf.randomNormal([GROUPS, ROWS, HD], 0, 1, 'float32', 1)) as tf.Variable<tf.Rank.R3>
    const k = tf.randomNormal([GROUPS, KEYS, HD], 0, 1, 'float32', 2) as tf.Tensor3D
    const mask = randomMask([1, 1, T, KEYS], 4)
    let taken: tf.Tensor3D | undefined
    const { grads } = tf.variableGrads(() => {
      taken = fusedAttention(q, k, k, mask, KV)
      return tf.sum(composed(q, k, k, mask)) as tf.Scalar
    })
    assert.equal(taken, undefined)
    assert.deepEqual(grads[q.name]!.shape, [GROUPS, ROWS, HD])
    tf.dispose([q, k, mask, ...Object.values(grads)])
  })

  it('attention kernel - is not taken on a backend without it (cpu)', async () => {
    await tf.setBackend('cpu')
    const q = tf.zeros([GROUPS, ROWS, HD]) as tf.Tensor3D
    const k = tf.zeros([GROUPS, KEYS, HD]) as tf.Tensor3D
    const mask = tf.zeros([1, 1, T, KEYS]) as tf.Tensor4D
    assert.equal(fusedAttention(q, k, k, mask, KV), undefined)
    tf.dispose([q, k, mask])
  })

  it('attention kernel - refuses rows that are not a multiple of the steps, naming the rule', async () => {
    const backend = await chooseBackend({ backend: 'native', log: () => {} })
    assert.equal(backend.name, 'native')
    const { addon } = tf.backend() as NativeBackend
    const f = (n: number) => new Float32Array(n)
    assert.throws(
      () => addon.attention(f(8), f(8), f(8), f(8), f(8), 1, 4, 2, 2, 3, 1, 1),
      /rows must be a multiple of steps/,
    )
    assert.throws(
      () => addon.attention(f(8), f(8), f(8), f(8), f(8), 2, 2, 2, 2, 2, 3, 1),
      /maskBatch \* kvHeads must equal groups/,
    )
  })
})
