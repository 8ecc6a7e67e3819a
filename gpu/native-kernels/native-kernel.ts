import type * as tf from '@tensorflow/tfjs'
import type { NativeBackend } from '../native-backend.ts'

/** A kernel of the native engine: its tfjs name and its function (the backend is a `NativeBackend`). */
export interface NativeKernel {
  kernelName: string
  kernelFunc: (args: {
    inputs: tf.NamedTensorInfoMap
    backend: NativeBackend
    attrs?: tf.NamedAttrMap
  }) => tf.TensorInfo | tf.TensorInfo[]
}
