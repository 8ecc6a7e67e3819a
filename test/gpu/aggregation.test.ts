import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  AggregationMode,
  aggregateSeqMeanTokenMean,
  aggregateSeqMeanTokenSum,
  aggregateTokenMean,
  getAggregator,
} from '../../gpu/aggregation.ts'
import { ShapeError, UnknownVariantError } from '../../gpu/errors.ts'
import { useTestBackend } from '../support/test-backend.ts'

// Ragged lengths 4, 2, 1 and an empty row; masked-out entries hold junk that must not count.
const loss = tf.tensor2d([
  [1, 2, 3, 4],
  [10, 20, 99, 99],
  [5, 99, 99, 99],
  [99, 99, 99, 99],
])
const mask = tf.tensor2d([
  [1, 1, 1, 1],
  [1, 1, 0, 0],
  [1, 0, 0, 0],
  [0, 0, 0, 0],
])

/** Plain-loop reference of each mode. */
function loop(mode: AggregationMode, l: number[][], m: number[][]): number {
  const rows = l.map((row, i) => row.filter((_, t) => m[i]![t] === 1)).filter((r) => r.length > 0)
  const sum = (xs: number[]) => xs.reduce((s, v) => s + v, 0)
  if (rows.length === 0) return 0
  if (mode === 'token-mean') return sum(rows.map(sum)) / sum(rows.map((r) => r.length))
  if (mode === 'seq-mean-token-mean') return sum(rows.map((r) => sum(r) / r.length)) / rows.length
  return sum(rows.map(sum)) / rows.length
}

describe('gpu/aggregation', () => {
  before(async () => {
    await useTestBackend()
  })

  it('aggregation - token-mean on ragged lengths: (10 + 30 + 5) / 7', () => {
    assert.ok(Math.abs(aggregateTokenMean(loss, mask).dataSync()[0]! - 45 / 7) < 1e-6)
  })

  it('aggregation - seq-mean-token-mean on ragged lengths: (2.5 + 15 + 5) / 3, empty row excluded', () => {
    assert.equal(aggregateSeqMeanTokenMean(loss, mask).dataSync()[0], 7.5)
  })

  it('aggregation - seq-mean-token-sum on ragged lengths: (10 + 30 + 5) / 3, empty row excluded', () => {
    assert.equal(aggregateSeqMeanTokenSum(loss, mask).dataSync()[0], 15)
  })

  it('aggregation - an empty mask gives 0 in every mode, never NaN', () => {
    for (const mode of Object.values(AggregationMode)) {
      assert.equal(getAggregator(mode)(loss, tf.zerosLike(mask)).dataSync()[0], 0, mode)
    }
  })

  it('aggregation - tensor versions match a plain loop across shapes and seeds (tol 1e-5)', () => {
    for (const [seed, batch, seqLen] of [
      [21, 1, 1],
      [22, 3, 8],
      [23, 9, 31],
    ] as const) {
      const l = tf.randomNormal([batch, seqLen], 0, 3, 'float32', seed) as tf.Tensor2D
      const m = tf.randomUniform([batch, seqLen], 0, 2, 'int32', seed + 1).toFloat() as tf.Tensor2D
      for (const mode of Object.values(AggregationMode)) {
        const got = getAggregator(mode)(l, m).dataSync()[0]!
        const want = loop(mode, l.arraySync(), m.arraySync())
        assert.ok(
          Math.abs(got - want) <= 1e-5 * Math.max(1, Math.abs(want)),
          `${mode} seed ${seed}: ${got} vs ${want}`,
        )
      }
    }
  })

  it('aggregation - an unknown mode lists the valid ones; mismatched shapes throw', () => {
    assert.throws(
      () => getAggregator('sum'),
      (e: unknown) =>
        e instanceof UnknownVariantError &&
        e.message ===
          "unknown aggregation mode 'sum'; valid names: seq-mean-token-mean, seq-mean-token-sum, token-mean",
    )
    assert.throws(() => aggregateTokenMean(loss, tf.ones([4, 3]) as tf.Tensor2D), ShapeError)
  })
})
