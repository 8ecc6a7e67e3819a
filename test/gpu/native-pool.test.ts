import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import type { NativeBackend } from '../../gpu/native-backend.ts'
import { nativeAvailable } from '../support/native-compare.ts'

const skip = nativeAvailable ? false : 'the native addon is not built'
const N = 8192 // above the pool's smallest recycled size

describe('native backend - the pool of recycled outputs', { skip }, () => {
  let backend: NativeBackend
  before(async () => {
    await tf.setBackend('native')
    backend = tf.backend() as NativeBackend
  })
  const ramp = () => tf.tensor1d(Float32Array.from({ length: N }, (_, i) => i))

  it('native pool - an output freed by its last tensor serves the next output of its dtype and length, zeroed and rewritten', () => {
    const a = ramp()
    const y1 = tf.mul(a, 2)
    const buffer = backend.values(y1).buffer
    y1.dispose()
    assert.equal(backend.pooledByteCount() >= N * 4, true)
    const y2 = tf.mul(a, 3)
    assert.equal(backend.values(y2).buffer, buffer)
    assert.deepEqual(Array.from(y2.dataSync().slice(0, 4)), [0, 3, 6, 9])
    assert.equal(y2.dataSync()[N - 1], 3 * (N - 1))
    tf.dispose([a, y2])
  })

  it('native pool - what dataSync and data return is a copy: recycling the storage does not change it', async () => {
    const a = ramp()
    const y = tf.mul(a, 2)
    const read = y.dataSync()
    const readAsync = await y.data()
    assert.notEqual(read.buffer, backend.values(y).buffer)
    y.dispose()
    const z = tf.mul(a, -1) // takes y's storage from the pool
    assert.equal(read[5], 10)
    assert.equal(readAsync[5], 10)
    tf.dispose([a, z])
  })

  it('native pool - a view of an output (a contiguous slice) keeps its storage out of the pool until the view is disposed', () => {
    const a = ramp()
    const x = tf.mul(a, 2)
    const s = tf.slice(x, [0], [100])
    assert.equal(backend.values(s).buffer, backend.values(x).buffer) // a view, as on the cpu backend
    const buffer = backend.values(x).buffer
    x.dispose()
    const y = tf.mul(a, 5)
    assert.notEqual(backend.values(y).buffer, buffer)
    assert.equal(s.dataSync()[7], 14)
    s.dispose()
    const w = tf.mul(a, 7) // now the storage is free again
    assert.equal(backend.values(w).buffer, buffer)
    assert.equal(w.dataSync()[7], 49)
    tf.dispose([a, y, w])
  })

  it('native pool - a reshape shares the storage (one tensor data, two tensors): freed only after both', () => {
    const a = ramp()
    const x = tf.mul(a, 2)
    const r = tf.reshape(x, [2, N / 2])
    const buffer = backend.values(x).buffer
    x.dispose()
    const y = tf.mul(a, 3)
    assert.notEqual(backend.values(y).buffer, buffer)
    assert.equal(r.dataSync()[3], 6)
    r.dispose()
    const w = tf.mul(a, 4)
    assert.equal(backend.values(w).buffer, buffer)
    tf.dispose([a, y, w])
  })
})
