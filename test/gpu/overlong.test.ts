import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { ConfigError } from '../../gpu/errors.ts'
import { computeOverlongPenalty, overlongPenalty, shapeOverlongRewards } from '../../gpu/overlong.ts'
import { useTestBackend } from '../support/test-backend.ts'

describe('gpu/overlong', () => {
  before(async () => {
    await useTestBackend()
  })

  it('overlong - penalties at the edges of the three regions (L_max 10, L_buf 4)', () => {
    // |y| <= 6: 0; 6 < |y| <= 10: (6 - |y|) / 4; |y| > 10: -1
    const lengths = tf.tensor1d([0, 6, 7, 8, 9, 10, 11, 100], 'int32')
    const got = computeOverlongPenalty(lengths, { L_max: 10, L_buf: 4 })
    assert.deepEqual(
      [...got.dataSync()].map((v) => v + 0),
      [0, 0, -0.25, -0.5, -0.75, -1, -1, -1],
    )
  })

  it('overlong - the plain-number penalty equals the tensor one; bad lengths and configs are named', () => {
    const config = { L_max: 10, L_buf: 4 }
    const got = [0, 6, 7, 8, 9, 10, 11, 100].map((n) => overlongPenalty(n, config) + 0)
    assert.deepEqual(got, [0, 0, -0.25, -0.5, -0.75, -1, -1, -1])
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY])
      assert.throws(
        () => overlongPenalty(bad, config),
        (e: unknown) => e instanceof ConfigError && e.field === 'length',
      )
    assert.throws(
      () => overlongPenalty(3, { L_max: 10, L_buf: 11 }),
      (e: unknown) => e instanceof ConfigError && e.field === 'L_buf',
    )
  })

  it('overlong - shaping adds the penalty to the reward', () => {
    const got = shapeOverlongRewards(tf.tensor1d([1, 1, 0]), tf.tensor1d([3, 5, 9]), {
      L_max: 8,
      L_buf: 4,
    })
    assert.deepEqual([...got.dataSync()], [1, 0.75, -1])
  })

  it('overlong - a buffer outside (0, L_max] is rejected', () => {
    for (const L_buf of [0, -1, 11, Number.NaN]) {
      assert.throws(
        () => computeOverlongPenalty(tf.tensor1d([1]), { L_max: 10, L_buf }),
        (e: unknown) => e instanceof ConfigError && e.field === 'L_buf',
      )
    }
  })
})
