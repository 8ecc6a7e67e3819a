import * as tf from '@tensorflow/tfjs'
import { NativeBackend } from '../native-backend.ts'

/**
 * `sum_i x_i^2` of a float32 tensor in one native pass on the engine's threads (added up in
 * double), where the native engine holds it; undefined elsewhere (the caller composes it from tfjs
 * ops). No kernel is dispatched and nothing is allocated.
 * @param x any shape, float32.
 */
export function nativeSumSquares(x: tf.Tensor): number | undefined {
  const backend = tf.backend()
  if (!(backend instanceof NativeBackend) || x.dtype !== 'float32') return undefined
  const values = backend.values(x)
  if (!(values instanceof Float32Array)) return undefined
  return backend.addon.sumSquares(values, x.size)
}
