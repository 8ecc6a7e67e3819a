/**
 * A worker thread for test/gpu/native-threads.test.ts: on the native backend, multiplies the
 * matrices it is sent `reps` times and replies with every product's sum of entries, so the test can
 * compare what a second JavaScript thread computes while the main thread uses the pool.
 */
import { parentPort } from 'node:worker_threads'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend } from '../../gpu/index.ts'

const port = parentPort
if (!port) throw new Error('native-product-thread.ts runs only as a worker thread')
await chooseBackend({ backend: 'native', log: () => {} })
port.on('message', (m: { a: Float32Array; b: Float32Array; n: number; reps: number }) => {
  const a = tf.tensor2d(m.a, [m.n, m.n])
  const b = tf.tensor2d(m.b, [m.n, m.n])
  const sums: number[] = []
  for (let i = 0; i < m.reps; i++) sums.push(tf.tidy(() => tf.sum(tf.matMul(a, b)).dataSync()[0]!))
  tf.dispose([a, b])
  port.postMessage(sums)
})
port.postMessage('ready')
