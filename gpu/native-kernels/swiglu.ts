import * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeKernel } from './native-kernel.ts'

/** `TriadSwiglu`: `silu(gate) * up` (Shazeer 2020, eq. 6); gate, up float32 of one shape; output the same. */
export const swigluKernel: NativeKernel = {
  kernelName: FusedKernel.Swiglu,
  kernelFunc: ({ inputs, backend }) => {
    const { gate, up } = inputs as { gate: tf.TensorInfo; up: tf.TensorInfo }
    const n = tf.util.sizeFromShape(gate.shape)
    const out = backend.allocate('float32', n) as Float32Array
    backend.addon.swiglu(backend.values(gate) as Float32Array, backend.values(up) as Float32Array, out, n)
    return backend.output(out, gate.shape, 'float32')
  },
}

/** `TriadSwigluGrad`: `dgate = dh up s (1 + gate (1 - s))`, `dup = dh gate s`, `s = sigmoid(gate)`; outputs [dgate, dup]. */
export const swigluGradKernel: NativeKernel = {
  kernelName: FusedKernel.SwigluGrad,
  kernelFunc: ({ inputs, backend }) => {
    const { dh, gate, up } = inputs as { dh: tf.TensorInfo; gate: tf.TensorInfo; up: tf.TensorInfo }
    const n = tf.util.sizeFromShape(gate.shape)
    const dgate = backend.allocate('float32', n) as Float32Array
    const dup = backend.allocate('float32', n) as Float32Array
    backend.addon.swigluGrad(
      backend.values(dh) as Float32Array,
      backend.values(gate) as Float32Array,
      backend.values(up) as Float32Array,
      dgate,
      dup,
      n,
    )
    return [backend.output(dgate, gate.shape, 'float32'), backend.output(dup, gate.shape, 'float32')]
  },
}
