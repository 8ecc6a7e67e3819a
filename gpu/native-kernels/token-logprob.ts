import type * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeBackend } from '../native-backend.ts'
import type { NativeKernel } from './native-kernel.ts'

function int32Values(backend: NativeBackend, t: tf.TensorInfo): Int32Array {
  const v = backend.values(t)
  return v instanceof Int32Array ? v : Int32Array.from(v as ArrayLike<number>)
}

/**
 * `TriadTokenLogprob`: `out[r] = logits[r, y_r] - logsumexp(logits[r])` (log softmax at the chosen
 * token). Inputs logits `[rows, vocab]` float32, targets `[rows]` int32; output `[rows]` float32
 * (NaN for a target outside the vocabulary).
 */
export const tokenLogprobKernel: NativeKernel = {
  kernelName: FusedKernel.TokenLogprob,
  kernelFunc: ({ inputs, backend }) => {
    const { logits, targets } = inputs as { logits: tf.TensorInfo; targets: tf.TensorInfo }
    const [rows, vocab] = logits.shape as [number, number]
    const out = new Float32Array(rows)
    backend.addon.tokenLogprob(
      backend.values(logits) as Float32Array,
      int32Values(backend, targets),
      out,
      rows,
      vocab,
    )
    return backend.output(out, [rows], 'float32')
  },
}

/**
 * `TriadTokenLogprobGrad`: `dlogits = dlogp (onehot(y) - softmax(logits))`, `[rows, vocab]`.
 * With the attribute `reuseLogits` (the caller needs the logits no more) and no other tensor over
 * the logits' array, the gradient is written over the logits (each element is read before it is
 * written), so the backward pass of the output head holds one `[rows, vocab]` array, not two.
 */
export const tokenLogprobGradKernel: NativeKernel = {
  kernelName: FusedKernel.TokenLogprobGrad,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dy, logits, targets } = inputs as {
      dy: tf.TensorInfo
      logits: tf.TensorInfo
      targets: tf.TensorInfo
    }
    const [rows, vocab] = logits.shape as [number, number]
    const dz =
      attrs?.reuseLogits === true && backend.soleHolder(logits)
        ? (backend.values(logits) as Float32Array)
        : (backend.allocate('float32', rows * vocab) as Float32Array)
    backend.addon.tokenLogprobGrad(
      backend.values(dy) as Float32Array,
      backend.values(logits) as Float32Array,
      int32Values(backend, targets),
      dz,
      rows,
      vocab,
    )
    return backend.output(dz, logits.shape, 'float32')
  },
}

/** `TriadTokenEntropy`: the entropy of each row of logits `[rows, vocab]`, `[rows]` float32. */
export const tokenEntropyKernel: NativeKernel = {
  kernelName: FusedKernel.TokenEntropy,
  kernelFunc: ({ inputs, backend }) => {
    const { logits } = inputs as { logits: tf.TensorInfo }
    const [rows, vocab] = logits.shape as [number, number]
    const out = backend.allocate('float32', rows) as Float32Array
    backend.addon.tokenEntropy(backend.values(logits) as Float32Array, out, rows, vocab)
    return backend.output(out, [rows], 'float32')
  },
}
