import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { Worker } from 'node:worker_threads'
import * as tf from '@tensorflow/tfjs'
import { nativeAvailable } from '../support/native-compare.ts'

const skip = nativeAvailable ? false : 'the native addon is not built'
const N = 384
const REPS = 40

/** Seeded `[N, N]` float32 values. */
const matrix = (seed: number) =>
  tf.tidy(() => tf.randomNormal([N, N], 0, 1, 'float32', seed).dataSync() as Float32Array)

describe('native backend - two JavaScript threads on one pool of threads', { skip }, () => {
  before(async () => {
    await tf.setBackend('native')
  })

  it('native threads - products computed by two threads at once equal those of one thread alone', async () => {
    const a = matrix(1)
    const b = matrix(2)
    const ta = tf.tensor2d(a, [N, N])
    const tb = tf.tensor2d(b, [N, N])
    const alone = tf.tidy(() => tf.sum(tf.matMul(ta, tb)).dataSync()[0]!)
    // the thread's module is TypeScript: register tsx inside it first (a worker does not inherit the loader)
    const api = import.meta.resolve('tsx/esm/api')
    const entry = new URL('../support/native-product-thread.ts', import.meta.url).href
    const worker = new Worker(
      `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}) })`,
      { eval: true },
    )
    try {
      await new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve())
        worker.once('error', reject)
      })
      const theirs = new Promise<number[]>((resolve, reject) => {
        worker.once('message', resolve)
        worker.once('error', reject)
      })
      worker.postMessage({ a, b, n: N, reps: REPS })
      const ours: number[] = []
      for (let i = 0; i < REPS; i++) ours.push(tf.tidy(() => tf.sum(tf.matMul(ta, tb)).dataSync()[0]!))
      const other = await theirs
      assert.deepEqual(ours, Array(REPS).fill(alone))
      assert.deepEqual(other, Array(REPS).fill(alone))
    } finally {
      await worker.terminate()
      tf.dispose([ta, tb])
    }
  })
})
