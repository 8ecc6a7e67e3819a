import * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeKernel } from './native-kernel.ts'

/**
 * `TriadRmsNorm`: RMSNorm over the last axis in one pass, `y = x / sqrt(mean(x^2) + eps) * g`
 * (Zhang & Sennrich 2019, eq. 4). Inputs x `[..., d]` float32, g `[d]`; attr `eps`; output like x.
 */
export const rmsNormKernel: NativeKernel = {
  kernelName: FusedKernel.RmsNorm,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, g } = inputs as { x: tf.TensorInfo; g: tf.TensorInfo }
    const d = g.shape[0]!
    const size = tf.util.sizeFromShape(x.shape)
    const y = backend.allocate('float32', size) as Float32Array
    backend.addon.rmsNorm(
      backend.values(x) as Float32Array,
      backend.values(g) as Float32Array,
      y,
      size / d,
      d,
      (attrs as { eps: number }).eps,
    )
    return backend.output(y, x.shape, 'float32')
  },
}

/**
 * `TriadRmsNormGrad`: with `r = 1/RMS(x)` and `u = dy g`, `dx = r u - x r^3 (u . x) / d` and
 * `dg = sum over rows of dy x r`. Inputs dy, x `[..., d]`, g `[d]`; attr `eps`; outputs [dx, dg].
 */
export const rmsNormGradKernel: NativeKernel = {
  kernelName: FusedKernel.RmsNormGrad,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dy, x, g } = inputs as { dy: tf.TensorInfo; x: tf.TensorInfo; g: tf.TensorInfo }
    const d = g.shape[0]!
    const size = tf.util.sizeFromShape(x.shape)
    const dx = backend.allocate('float32', size) as Float32Array
    const dg = new Float32Array(d)
    backend.addon.rmsNormGrad(
      backend.values(dy) as Float32Array,
      backend.values(x) as Float32Array,
      backend.values(g) as Float32Array,
      dx,
      dg,
      size / d,
      d,
      (attrs as { eps: number }).eps,
    )
    return [backend.output(dx, x.shape, 'float32'), backend.output(dg, g.shape, 'float32')]
  },
}
