import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { computeEntropyFromLogits } from '../../gpu/entropy.ts'
import { ShapeError } from '../../gpu/errors.ts'
import { useTestBackend } from '../support/test-backend.ts'

describe('gpu/entropy', () => {
  before(async () => {
    await useTestBackend()
  })

  it('entropy - uniform logits give log V, a peaked distribution nearly 0', () => {
    const h = computeEntropyFromLogits(
      tf.tensor3d([
        [
          [3, 3, 3, 3],
          [100, 0, 0, 0],
        ],
      ]),
    ).dataSync()
    assert.ok(Math.abs(h[0]! - Math.log(4)) < 1e-6)
    assert.ok(h[1]! >= 0 && h[1]! < 1e-6)
  })

  it('entropy - matches -sum p log p computed in a loop across shapes and seeds (tol 1e-5)', () => {
    for (const [seed, b, t, v] of [
      [41, 1, 1, 2],
      [42, 2, 5, 17],
      [43, 3, 4, 64],
    ] as const) {
      const logits = tf.randomNormal([b, t, v], 0, 3, 'float32', seed) as tf.Tensor3D
      const got = computeEntropyFromLogits(logits).dataSync()
      const rows = (logits.arraySync() as number[][][]).flat()
      rows.forEach((z, i) => {
        const mx = Math.max(...z)
        const e = z.map((x) => Math.exp(x - mx))
        const s = e.reduce((a, x) => a + x, 0)
        const want = -e.reduce((a, x) => a + (x / s) * Math.log(x / s), 0)
        assert.ok(Math.abs(got[i]! - want) < 1e-5, `${i}: ${got[i]} vs ${want}`)
      })
    }
  })

  it('entropy - logits that are not 3-D are rejected', () => {
    assert.throws(() => computeEntropyFromLogits(tf.zeros([2, 3]) as unknown as tf.Tensor3D), ShapeError)
  })
})
