import * as tf from '@tensorflow/tfjs'
import type { NativeKernel } from './native-kernel.ts'
import { cpuKernel, newWords, sizeOf, wordValues } from './words.ts'

/**
 * `Transpose`: `out` `[shape[perm[0]], ...]` = x `shape` with its axes permuted by the attr `perm`,
 * float32 or int32, rank up to 16 (the cpu backend's loop converts every index; this one copies
 * contiguous runs, or 8x8 tiles when the innermost axis moves). Other dtypes go to the cpu kernel.
 */
export const transposeKernel: NativeKernel = {
  kernelName: tf.Transpose,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const { perm } = args.attrs as unknown as { perm: number[] } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v || x.shape.length > 16) return cpuKernel(tf.Transpose, args)
    const shape = perm.map((p) => x.shape[p]!)
    const out = newWords(backend, x.dtype, sizeOf(x.shape))
    backend.addon.transpose(v, out, Int32Array.from(x.shape), Int32Array.from(perm))
    return backend.output(out, shape, x.dtype)
  },
}
