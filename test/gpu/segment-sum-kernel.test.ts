import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend, createRng } from '../../gpu/index.ts'

describe('gpu/segment-sum-kernel', () => {
  before(async () => {
    await chooseBackend({ backend: 'wasm', log: () => {} })
  })

  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: rows with the same id are summed, ids outside [0, numSegments) dropped`, async () => {
      await chooseBackend({ backend, log: () => {} })
      const x = tf.tensor2d([1, 2, 10, 20, 100, 200, 1000, 2000, 5, 6], [5, 2])
      const ids = tf.tensor1d([3, 0, 3, 7, -1], 'int32')
      const out = tf.unsortedSegmentSum(x, ids, 4)
      assert.deepEqual(out.shape, [4, 2])
      assert.deepEqual(Array.from(out.dataSync()), [10, 20, 0, 0, 0, 0, 101, 202])
      tf.dispose([x, ids, out])
      await chooseBackend({ backend: 'wasm', log: () => {} })
    })
  }

  it('as the gradient of gather it equals the one-hot matmul gradient, at a 151,936-token vocabulary', async () => {
    const vocab = 151936
    const rng = createRng(5)
    const ids = Array.from({ length: 12 }, () => rng.int(vocab))
    ids[5] = ids[2]! // a repeated id: its rows add up
    const idx = tf.tensor1d(ids, 'int32')
    const table = tf.randomNormal([vocab, 8], 0, 1, 'float32', 3) as tf.Tensor2D
    const w = tf.randomNormal([12, 8], 0, 1, 'float32', 4)
    const viaGather = tf.grad((e: tf.Tensor) => tf.sum(tf.mul(tf.gather(e, idx), w)))(table)
    const viaOneHot = tf.grad((e: tf.Tensor) =>
      tf.sum(tf.mul(tf.matMul(tf.oneHot(idx, vocab), e as tf.Tensor2D), w)),
    )(table)
    assert.deepEqual(viaGather.shape, [vocab, 8])
    const a = viaGather.dataSync()
    const b = viaOneHot.dataSync()
    let maxDiff = 0
    let nonzeroRows = 0
    for (let r = 0; r < vocab; r++) {
      let any = false
      for (let k = 0; k < 8; k++) {
        maxDiff = Math.max(maxDiff, Math.abs(a[r * 8 + k]! - b[r * 8 + k]!))
        if (a[r * 8 + k] !== 0) any = true
      }
      if (any) nonzeroRows++
    }
    assert.ok(maxDiff < 1e-6, `max diff ${maxDiff}`)
    assert.equal(nonzeroRows, 11) // 12 ids, one repeated
    const wd = w.dataSync()
    for (let k = 0; k < 8; k++)
      assert.ok(Math.abs(a[ids[2]! * 8 + k]! - (wd[2 * 8 + k]! + wd[5 * 8 + k]!)) < 1e-6)
    tf.dispose([idx, table, w, viaGather, viaOneHot])
  })
})
