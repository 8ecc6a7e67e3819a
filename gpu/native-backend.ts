import * as tf from '@tensorflow/tfjs'
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu'
import type { NativeAddon } from './native-addon.ts'
import { NATIVE_KERNELS } from './native-kernels/index.ts'

/**
 * The native engine as a tfjs backend (named `native`), the way tfjs-node is one over
 * libtensorflow: one model implementation runs on it, in rollout engines and learner alike.
 *
 * Tensors are float32/int32 typed arrays in process memory (outside any wasm heap, so a model is
 * bounded by the machine's memory, not 4 GiB). The hot kernels (`native-kernels/`) run in the
 * compiled addon, SIMD and multi-threaded; every other kernel is the tfjs `cpu` backend's,
 * registered again under `native`, so the backend is complete from the start and a kernel moves
 * to native code when a measurement says it matters.
 */
export const NATIVE_BACKEND = 'native'

/** The storage of the `native` backend: the cpu backend's, values read as typed arrays. */
export class NativeBackend extends MathBackendCPU {
  constructor(readonly addon: NativeAddon) {
    super()
    // silence the cpu backend's one-time "install tfjs-node" banner: triad prints its choice
    ;(this as unknown as { firstUse: boolean }).firstUse = false
  }

  /** The values of a tensor as stored (no copy). */
  values(t: tf.TensorInfo): tf.TypedArray {
    return this.data.get(t.dataId).values as tf.TypedArray
  }

  /** A new tensor over `values` (kept, not copied). */
  output(values: tf.TypedArray, shape: number[], dtype: tf.DataType): tf.TensorInfo {
    return this.makeTensorInfo(shape, dtype, values)
  }
}

/** A kernel of the native engine: its tfjs name and its function (the backend is a `NativeBackend`). */
export interface NativeKernel {
  kernelName: string
  kernelFunc: (args: {
    inputs: tf.NamedTensorInfoMap
    backend: NativeBackend
    attrs?: tf.NamedAttrMap
  }) => tf.TensorInfo | tf.TensorInfo[]
}

let registered = false

/**
 * Registers the `native` backend once: the cpu backend's kernels, then triad's native ones over
 * them. Activate it with `tf.setBackend('native')`.
 */
export function registerNativeBackend(addon: NativeAddon): void {
  if (registered) return
  registered = true
  tf.registerBackend(NATIVE_BACKEND, () => new NativeBackend(addon), 0)
  for (const k of tf.getKernelsForBackend('cpu')) tf.registerKernel({ ...k, backendName: NATIVE_BACKEND })
  for (const k of NATIVE_KERNELS) {
    if (tf.getKernel(k.kernelName, NATIVE_BACKEND)) tf.unregisterKernel(k.kernelName, NATIVE_BACKEND)
    tf.registerKernel({
      kernelName: k.kernelName,
      backendName: NATIVE_BACKEND,
      kernelFunc: k.kernelFunc as unknown as tf.KernelFunc,
    })
  }
}
