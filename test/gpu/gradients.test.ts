import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { globalNorm } from '../../gpu/gradients.ts'
import { nativeSumSquares } from '../../gpu/native-kernels/sum-squares.ts'
import { nativeAvailable } from '../support/native-compare.ts'
import { useTestBackend } from '../support/test-backend.ts'

describe('gpu/gradients - globalNorm', () => {
  after(async () => {
    await useTestBackend()
  })
  const norms = async (backend: string) => {
    await tf.setBackend(backend)
    const grads = [tf.tensor2d([3, 0, 0, 4], [2, 2]), tf.tensor1d([12])]
    // more values than one block of the native pass (65,536), each 0.5: sum of squares 25,000
    const long = tf.fill([100_000], 0.5)
    const out = {
      exact: await globalNorm(grads), // sqrt(9 + 16 + 144) = 13
      empty: await globalNorm([]),
      long: await globalNorm([long]),
      nan: await globalNorm([...grads, tf.tensor1d([Number.NaN])]),
      inf: await globalNorm([tf.tensor1d([Number.POSITIVE_INFINITY])]),
    }
    tf.dispose([...grads, long])
    return out
  }

  it('globalNorm - tfjs ops (cpu backend): exact on exact values, 0 for none, NaN and Infinity carried', async () => {
    assert.deepEqual(await norms('cpu'), {
      exact: 13,
      empty: 0,
      long: Math.sqrt(25_000),
      nan: Number.NaN,
      inf: Infinity,
    })
  })

  it('globalNorm - the native pass gives the same values, and is the one taken there', {
    skip: !nativeAvailable && 'the native addon is not built',
  }, async () => {
    assert.deepEqual(await norms('native'), {
      exact: 13,
      empty: 0,
      long: Math.sqrt(25_000),
      nan: Number.NaN,
      inf: Infinity,
    })
    const x = tf.tensor1d([1, 2])
    assert.equal(nativeSumSquares(x), 5)
    assert.equal(nativeSumSquares(tf.tensor1d([1, 2], 'int32')), undefined) // int32: the tfjs path
    await tf.setBackend('cpu')
    assert.equal(nativeSumSquares(x), undefined)
    x.dispose()
  })
})
