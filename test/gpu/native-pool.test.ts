import assert from 'node:assert/strict'
import { totalmem } from 'node:os'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { tokenLogprob } from '../../gpu/fused-ops.ts'
import {
  defaultPoolMaxBytes,
  type NativeBackend,
  POOL_MIN_MAX_BYTES,
  poolSizeClass,
  processMemoryBytes,
} from '../../gpu/native-backend.ts'
import { tapeGradients } from '../../gpu/tape-gradients.ts'
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

  it('native pool - size classes: 8 a power of two, exact below 4096 and above 2^24 elements', () => {
    assert.deepEqual(
      [4095, 4096, 4097, 4608, 4609, 5000, 8192, 8193, 100_000, 1 << 24, (1 << 24) + 1].map(poolSizeClass),
      [4095, 4096, 4608, 4608, 5120, 5120, 8192, 9216, 106_496, 1 << 24, (1 << 24) + 1],
    )
  })

  it('native pool - an output of a nearby length (same size class) takes a freed array, as a view of its length', () => {
    const a = tf.tensor1d(Float32Array.from({ length: 8000 }, (_, i) => i))
    const y1 = tf.mul(a, 2)
    const buffer = backend.values(y1).buffer
    y1.dispose()
    const b = tf.tensor1d(Float32Array.from({ length: 7800 }, (_, i) => i))
    const y2 = tf.mul(b, 3) // 7800 and 8000 are both in the class of 8192
    const values = backend.values(y2)
    assert.equal(values.buffer, buffer)
    assert.equal(values.length, 7800)
    assert.equal(y2.dataSync().length, 7800)
    assert.deepEqual(Array.from(y2.dataSync().slice(-2)), [3 * 7798, 3 * 7799])
    assert.equal(tf.max(y2).dataSync()[0], 3 * 7799)
    tf.dispose([a, b, y2])
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

  // [what shares the output's storage, how it is made, an index of it, its value there (2 x index)]
  const sharers: [string, (x: tf.Tensor1D) => tf.Tensor, number, number][] = [
    ['a view of it (a contiguous slice)', (x) => tf.slice(x, [0], [100]), 7, 14],
    ['a reshape (one tensor data, two tensors)', (x) => tf.reshape(x, [2, N / 2]), 3, 6],
  ]
  for (const [what, share, index, value] of sharers)
    it(`native pool - ${what} keeps an output's storage out of the pool until it is disposed too`, () => {
      const a = ramp()
      const x = tf.mul(a, 2) as tf.Tensor1D
      const s = share(x)
      const buffer = backend.values(x).buffer
      assert.equal(backend.values(s).buffer, buffer) // shared storage, as on the cpu backend
      x.dispose()
      const y = tf.mul(a, 3)
      assert.notEqual(backend.values(y).buffer, buffer)
      assert.equal(s.dataSync()[index], value)
      s.dispose()
      const w = tf.mul(a, 4) // now the storage is free again
      assert.equal(backend.values(w).buffer, buffer)
      assert.equal(w.dataSync()[index], 4 * index)
      tf.dispose([a, y, w])
    })

  it('native pool - the head gradient is written over logits that no other tensor holds, and only then', () => {
    const rows = 4
    const vocab = 2048 // rows x vocab above the pool's smallest recycled size
    const h = tf.variable(tf.randomNormal([rows, 8], 0, 1, 'float32', 11))
    const w = tf.randomNormal([8, vocab], 0, 1, 'float32', 12)
    const targets = tf.tensor1d([0, 5, 2047, 9], 'int32')
    const logprobSum = () => tf.sum(tokenLogprob(tf.matMul(h, w) as tf.Tensor2D, targets)) as tf.Scalar
    const sizes: number[] = []
    const allocate = backend.allocate.bind(backend)
    backend.allocate = (dtype, size) => {
      sizes.push(size)
      return allocate(dtype, size)
    }
    try {
      const frugal = tapeGradients(logprobSum, [h])
      const arraysOfHead = sizes.filter((n) => n === rows * vocab).length
      sizes.length = 0
      // the same gradient where the logits outlive the loss (kept by the caller): a second array
      let kept: tf.Tensor | undefined
      const keeping = tapeGradients(() => {
        const logits = tf.matMul(h, w) as tf.Tensor2D
        kept = tf.keep(logits)
        return tf.sum(tokenLogprob(logits, targets)) as tf.Scalar
      }, [h])
      const arraysWhenKept = sizes.filter((n) => n === rows * vocab).length
      assert.equal(arraysOfHead, 1) // the logits; the gradient over them
      assert.equal(arraysWhenKept, 2)
      assert.deepEqual(
        Array.from(frugal.grads[h.name]!.dataSync()),
        Array.from(keeping.grads[h.name]!.dataSync()),
      )
      assert.equal(frugal.value.dataSync()[0], keeping.value.dataSync()[0])
      tf.dispose([frugal.value, frugal.grads, keeping.value, keeping.grads, kept as tf.Tensor])
    } finally {
      backend.allocate = allocate
      tf.dispose([h, w, targets])
    }
  })
  it('native pool - past its bound, a freed array evicts the size classes freed longest ago, and one larger than the bound is not kept', () => {
    const saved = backend.poolMaxBytes
    // four size classes of float32 outputs, each its own class (lengths 8192, 9216, 10240, 11264)
    const lengths = [8192, 9216, 10240, 11264]
    const inputs = lengths.map((n) => tf.tensor1d(Float32Array.from({ length: n }, (_, i) => i)))
    const bufferOf = (t: tf.Tensor) => backend.values(t).buffer
    try {
      backend.emptyPool() // what earlier tests left
      assert.equal(backend.pooledByteCount(), 0)
      backend.poolMaxBytes = (8192 + 9216 + 10240) * 4 // the first three fit, not the fourth besides them
      const outputs = inputs.map((x) => tf.mul(x, 2))
      const buffers = outputs.map(bufferOf)
      for (const y of outputs.slice(0, 3)) y.dispose() // freed in order 8192, 9216, 10240
      assert.equal(backend.pooledByteCount(), (8192 + 9216 + 10240) * 4)
      outputs[3]!.dispose() // 11264: evicts 8192 (freed longest ago) and 9216, keeps 10240
      assert.equal(backend.pooledByteCount(), (10240 + 11264) * 4)
      const again = inputs.map((x) => tf.mul(x, 3))
      assert.deepEqual(
        again.map((y, i) => bufferOf(y) === buffers[i]),
        [false, false, true, true],
      )
      assert.equal(again[2]!.dataSync()[10239], 3 * 10239)
      tf.dispose(again)
      // an array larger than the whole bound goes to the garbage collector, the pool unchanged
      const pooled = backend.pooledByteCount()
      const big = tf.tensor1d(new Float32Array(40_000))
      tf.mul(big, 2).dispose()
      assert.equal(backend.pooledByteCount(), pooled)
      big.dispose()
    } finally {
      backend.poolMaxBytes = saved
      tf.dispose(inputs)
    }
  })

  it('native pool - the default bound is a quarter of the memory the process may use, at least 1 GiB', () => {
    const GiB = 2 ** 30
    assert.equal(POOL_MIN_MAX_BYTES, GiB)
    assert.equal(defaultPoolMaxBytes(24 * GiB), 6 * GiB)
    assert.equal(defaultPoolMaxBytes(6 * GiB + 3), Math.floor((6 * GiB + 3) / 4))
    assert.equal(defaultPoolMaxBytes(2 * GiB), GiB) // a quarter is 512 MiB: the floor holds
    // the process's memory: a cgroup limit only where one is set and below the machine's
    const constrained = process.constrainedMemory?.() ?? 0
    assert.equal(processMemoryBytes(), constrained > 0 && constrained < totalmem() ? constrained : totalmem())
    assert.ok(processMemoryBytes() <= totalmem())
    assert.equal(backend.poolMaxBytes, defaultPoolMaxBytes(processMemoryBytes()))
  })
})
