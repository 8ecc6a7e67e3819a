import * as tf from '@tensorflow/tfjs'
import type { NativeKernel } from './native-kernel.ts'
import { cpuKernel, sizeOf } from './words.ts'

/**
 * `Softmax` over the last axis (attr `dim`, -1 or rank - 1) of float32 `logits` `[..., n]`: per row
 * `exp(x - max) / sum exp(x - max)` in one native pass (the cpu backend runs five kernels). Its
 * gradient (tfjs's: `dy*y - sum(dy*y) y`) runs Multiply, Sum and Sub. Other axes (which the cpu
 * kernel rejects) and dtypes go to the cpu kernel. `tf.logSoftmax` and `tf.logSumExp` are no kernels
 * in tfjs 4: they compose Max, Sub, Exp, Sum, Log and Add, whose reductions are native (`reduce.ts`).
 */
export const softmaxKernel: NativeKernel = {
  kernelName: tf.Softmax,
  kernelFunc: (args) => {
    const { logits } = args.inputs as { logits: tf.TensorInfo }
    const { dim } = args.attrs as unknown as { dim: number } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const rank = logits.shape.length
    const v = logits.dtype === 'float32' ? backend.values(logits) : undefined
    if (!(v instanceof Float32Array) || rank === 0 || (dim !== -1 && dim !== rank - 1))
      return cpuKernel(tf.Softmax, args)
    const cols = logits.shape[rank - 1]!
    const size = sizeOf(logits.shape)
    const out = backend.allocate('float32', size) as Float32Array
    if (size > 0) backend.addon.softmax(v, out, size / cols, cols)
    return backend.output(out, logits.shape, 'float32')
  },
}
