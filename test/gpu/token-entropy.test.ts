import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { tokenEntropy } from '../../gpu/fused-ops.ts'
import { tapeGradients } from '../../gpu/tape-gradients.ts'
import { nativeAvailable, randomValues } from '../support/native-compare.ts'
import { useTestBackend } from '../support/test-backend.ts'

const ROWS = 37
const VOCAB = 1030 // more than one 512-value chunk of the kernel's pass, and not a multiple of 16

/** Random logits with a uniform row (H = ln V) and a near one-hot row (H near 0) at the end. */
function logitsValues(): number[] {
  const v = randomValues(ROWS * VOCAB, 7).map((x) => 4 * x)
  for (let j = 0; j < VOCAB; j++) v[(ROWS - 2) * VOCAB + j] = 1.5
  for (let j = 0; j < VOCAB; j++) v[(ROWS - 1) * VOCAB + j] = j === 3 ? 80 : 0
  return v
}

describe('gpu/fused-ops - tokenEntropy', () => {
  after(async () => {
    await useTestBackend()
  })

  it('tokenEntropy - composed (cpu): a uniform row gives ln V, a one-hot row 0, its gradient -p (log p + H)', async () => {
    await tf.setBackend('cpu')
    const z = tf.tensor2d([
      [2, 2, 2, 2],
      [0, 100, 0, 0],
      [0, Math.log(3), 0, 0],
    ])
    const h = tokenEntropy(z, { differentiable: true }).dataSync()
    assert.ok(Math.abs(h[0]! - Math.log(4)) < 1e-6)
    assert.ok(Math.abs(h[1]!) < 1e-6)
    // p = (1, 3, 1, 1) / 6
    const p = [1 / 6, 1 / 2, 1 / 6, 1 / 6]
    const H = -p.reduce((s, q) => s + q * Math.log(q), 0)
    assert.ok(Math.abs(h[2]! - H) < 1e-6)
    const row = tf.variable(tf.tensor2d([[0, Math.log(3), 0, 0]]))
    const { grads } = tapeGradients(
      () => tf.sum(tokenEntropy(row, { differentiable: true })) as tf.Scalar,
      [row],
    )
    const g = Object.values(grads)[0]!.dataSync()
    for (let j = 0; j < 4; j++) assert.ok(Math.abs(g[j]! + p[j]! * (Math.log(p[j]!) + H)) < 1e-6, `d/dz_${j}`)
    tf.dispose([z, row, ...Object.values(grads)])
  })

  it('tokenEntropy - the native kernel matches the composed form (1e-5) and takes no gradient', {
    skip: !nativeAvailable && 'the native addon is not built',
  }, async () => {
    const values = logitsValues()
    await tf.setBackend('cpu')
    const want = tf.tidy(() =>
      tokenEntropy(tf.tensor2d(values, [ROWS, VOCAB]), { differentiable: true }).dataSync(),
    )
    await tf.setBackend('native')
    const z = tf.variable(tf.tensor2d(values, [ROWS, VOCAB]))
    const got = tf.tidy(() => tokenEntropy(z, { differentiable: false }).dataSync())
    for (let r = 0; r < ROWS; r++)
      assert.ok(
        Math.abs(got[r]! - want[r]!) <= 1e-5 * Math.max(1, want[r]!),
        `row ${r}: ${got[r]} vs ${want[r]}`,
      )
    assert.ok(Math.abs(got[ROWS - 2]! - Math.log(VOCAB)) < 1e-5)
    assert.ok(Math.abs(got[ROWS - 1]!) < 1e-5)
    // on a tape, the value-only kernel saves nothing and a loss through it has no gradient
    assert.throws(
      () => tapeGradients(() => tf.sum(tokenEntropy(z, { differentiable: false })) as tf.Scalar, [z]),
      /gradient/i,
    )
    // differentiable on the native engine: the composed form, its gradient there
    const { grads } = tapeGradients(() => tf.sum(tokenEntropy(z, { differentiable: true })) as tf.Scalar, [z])
    assert.equal(Object.values(grads)[0]!.shape.join(), `${ROWS},${VOCAB}`)
    tf.dispose([z, ...Object.values(grads)])
  })
})
