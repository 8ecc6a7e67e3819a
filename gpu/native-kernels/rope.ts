import type * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeKernel } from './native-kernel.ts'

/**
 * `TriadRope`: rotary positions in the rotate-half form, `y = x cos + [x2, x1] sin` (RoFormer eq.
 * 34; the minus of the first half is in the sin table), or with attr `backward` its gradient
 * `dx = dy cos + swap(dy sin)` from dy given as x. Inputs x `[n, heads, headDim]` float32, cos and
 * sin `[n, headDim]` (any shape of n*headDim values: row i serves token i); output like x.
 */
export const ropeKernel: NativeKernel = {
  kernelName: FusedKernel.Rope,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, cos, sin } = inputs as { x: tf.TensorInfo; cos: tf.TensorInfo; sin: tf.TensorInfo }
    const [n, h, hd] = x.shape as [number, number, number]
    const y = backend.allocate('float32', n * h * hd) as Float32Array
    backend.addon.rope(
      backend.values(x) as Float32Array,
      backend.values(cos) as Float32Array,
      backend.values(sin) as Float32Array,
      y,
      n,
      h,
      hd,
      !!(attrs as { backward?: boolean } | undefined)?.backward,
    )
    return backend.output(y, x.shape, 'float32')
  },
}
