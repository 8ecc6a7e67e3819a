import * as tf from '@tensorflow/tfjs'
import { InvariantError } from '../../protocols/index.ts'
import type { NativeBackend } from '../native-backend.ts'

/**
 * Helpers of the data-movement, reduction and softmax kernels: the addon reads float32 and int32
 * values alike as 32-bit words, so one native loop serves both dtypes; every other dtype (bool,
 * string, complex64) and any tensor too large for int32 strides goes to the cpu backend's kernel.
 */

/** Values of a float32 or int32 tensor (no copy), or `undefined` for another dtype or a huge tensor. */
export function wordValues(backend: NativeBackend, t: tf.TensorInfo): Float32Array | Int32Array | undefined {
  if (t.dtype !== 'float32' && t.dtype !== 'int32') return undefined
  const v = backend.values(t)
  if (!(v instanceof Float32Array || v instanceof Int32Array)) return undefined
  return v.length < 2 ** 31 ? v : undefined
}

/** A zero-filled array of `size` elements of `dtype` (float32 or int32), from the backend's pool of recycled outputs. */
export function newWords(
  backend: NativeBackend,
  dtype: tf.DataType,
  size: number,
): Float32Array | Int32Array {
  return backend.allocate(dtype === 'int32' ? 'int32' : 'float32', size)
}

/** Number of elements of a tensor of `shape`. */
export function sizeOf(shape: readonly number[]): number {
  let n = 1
  for (const d of shape) n *= d
  return n
}

/** Row-major strides of `shape` (in elements, one per axis; the last is 1). */
export function stridesOf(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length)
  let s = 1
  for (let k = shape.length - 1; k >= 0; k--) {
    strides[k] = s
    s *= shape[k]!
  }
  return strides
}

/** Kernel arguments as tfjs passes them. */
export interface KernelArgs {
  inputs: tf.NamedTensorInfoMap
  backend: NativeBackend
  attrs?: tf.NamedAttrMap
}

/**
 * Runs the cpu backend's kernel `name` (the one registered when called, so a later replacement,
 * such as `segment-sum-kernel.ts`'s, is the one used) on the native backend's tensors.
 * @throws InvariantError when the cpu backend has no kernel `name`.
 */
export function cpuKernel(name: string, args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const kernel = tf.getKernel(name, 'cpu')
  if (!kernel) throw new InvariantError(`${name}: no cpu kernel to fall back to`)
  return kernel.kernelFunc(args as unknown as Parameters<tf.KernelFunc>[0]) as tf.TensorInfo | tf.TensorInfo[] // cast: the cpu kernel takes the same args, typed by tfjs as its own KernelFunc's
}

/** `x` (values `v`, `shape`) with its axes permuted by `perm`, a new array. */
export function transposeWords(
  backend: NativeBackend,
  v: Float32Array | Int32Array,
  dtype: tf.DataType,
  shape: readonly number[],
  perm: readonly number[],
): Float32Array | Int32Array {
  const out = newWords(backend, dtype, v.length)
  backend.addon.transpose(v, out, Int32Array.from(shape), Int32Array.from(perm))
  return out
}
