import * as tf from '@tensorflow/tfjs'
import type { NativeAddon } from './native-addon.ts'
import { NATIVE_BACKEND, NativeBackend } from './native-backend.ts'
import { NATIVE_KERNELS } from './native-kernels/index.ts'

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
      kernelFunc: k.kernelFunc as unknown as tf.KernelFunc, // cast: a kernel typed for its backend registered through tfjs' untyped KernelFunc
    })
  }
}
