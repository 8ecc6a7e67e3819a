import type * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeKernel } from './native-kernel.ts'

/**
 * `TriadAttention`: `softmax(q k^T + mask) v` in one native pass, forward only (no gradient is
 * registered: `fusedAttention` takes it only while no tape records). Inputs q `[groups, rows, hd]`,
 * k and v `[groups, keys, hd]`, mask `[maskBatch, 1, steps, keys]` float32; attr `kvHeads` (key/value
 * heads per sequence); output like q. Query row `i` of a group is at time `i mod steps`.
 */
export const attentionKernel: NativeKernel = {
  kernelName: FusedKernel.Attention,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as {
      q: tf.TensorInfo
      k: tf.TensorInfo
      v: tf.TensorInfo
      mask: tf.TensorInfo
    }
    const [groups, rows, hd] = q.shape as [number, number, number]
    const keys = k.shape[1]!
    const [maskBatch, , steps] = mask.shape as [number, number, number, number]
    const out = backend.allocate('float32', groups * rows * hd) as Float32Array
    backend.addon.attention(
      backend.values(q) as Float32Array,
      backend.values(k) as Float32Array,
      backend.values(v) as Float32Array,
      backend.values(mask) as Float32Array,
      out,
      groups,
      rows,
      keys,
      hd,
      steps,
      maskBatch,
      (attrs as { kvHeads: number }).kvHeads,
    )
    return backend.output(out, q.shape, 'float32')
  },
}
