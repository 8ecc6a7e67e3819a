import * as tf from '@tensorflow/tfjs'
import { type CudaAddon, type CudaInit, loadCudaAddon } from './cuda-addon.ts'
import { BackendActivationError, ConfigError } from './errors.ts'
import type { NativeAddon } from './native-addon.ts'
import { NATIVE_BACKEND, NativeBackend } from './native-backend.ts'
import { registerNativeBackend } from './register-native-backend.ts'

/**
 * The `cuda` tfjs backend: the native engine (`native-backend.ts`: the same storage and the same
 * kernels) with its matrix products run on a CUDA device when they are worth the trip.
 *
 * Every native kernel reaches the GEMM through `backend.addon.matmul`; this backend's addon is the
 * CPU engine's with that one entry routed: a product with enough FLOPs, and enough FLOPs per byte
 * copied, goes to the CUDA addon (operands copied to the device and back on every call), the
 * rest to the CPU GEMM. Elementwise kernels stay on the CPU: without tensors kept on the device,
 * copying their operands costs more than computing them (a few FLOPs per byte), where a GEMM does
 * O(n) FLOPs per byte. Keeping weights resident on the device is the next step (see
 * `gpu/native/cuda/gemm.cu`).
 */
export const CUDA_BACKEND = 'cuda'

/** When a product goes to the device rather than the CPU GEMM. */
export interface CudaDispatch {
  /** Products of fewer FLOPs (2 m n k per matrix) stay on the CPU: a launch and two copies cost ~20 us. */
  minFlops: number
  /**
   * Products with fewer FLOPs per byte copied (A, B and C, 4 bytes each) stay on the CPU: the host
   * link moves ~10-25 GB/s, a CPU GEMM does ~0.1-1 TFLOP/s. Decoding (m = 1) does 0.5 FLOP/byte.
   */
  minFlopsPerByte: number
}

/**
 * The default dispatch: 2^24 FLOPs and 16 FLOPs per byte. Estimates from the rates above, not
 * measured on a GPU yet; `TRIAD_CUDA_MIN_FLOPS` and `TRIAD_CUDA_MIN_FLOPS_PER_BYTE` override them
 * (0 and 0 send every product to the device).
 */
export const DEFAULT_CUDA_DISPATCH: Readonly<CudaDispatch> = { minFlops: 2 ** 24, minFlopsPerByte: 16 }

/** Environment variables that override `DEFAULT_CUDA_DISPATCH`, and one that prints `cudaDispatchStats` at exit. */
export const CUDA_ENV = {
  MinFlops: 'TRIAD_CUDA_MIN_FLOPS',
  MinFlopsPerByte: 'TRIAD_CUDA_MIN_FLOPS_PER_BYTE',
  Report: 'TRIAD_CUDA_REPORT',
} as const

/** Products routed so far, by where they ran (each matrix of a batch counts once). */
export interface CudaDispatchStats {
  gpu: { gemms: number; flops: number }
  cpu: { gemms: number; flops: number }
}

/** `env[name]` as a number, `fallback` when unset or empty. @throws ConfigError when it is not a number >= 0. */
function envNumber(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new ConfigError(name, raw, 'expected a number >= 0')
  return v
}

let dispatch: CudaDispatch = { ...DEFAULT_CUDA_DISPATCH }
const stats: CudaDispatchStats = { gpu: { gemms: 0, flops: 0 }, cpu: { gemms: 0, flops: 0 } }

/** Sets when products go to the device (unset fields keep their value). @returns the previous dispatch. */
export function setCudaDispatch(next: Partial<CudaDispatch>): CudaDispatch {
  const previous = dispatch
  dispatch = { ...dispatch, ...next }
  return previous
}

/** A copy of the routing counters of every `cuda`-style backend of this process. */
export function cudaDispatchStats(): CudaDispatchStats {
  return { gpu: { ...stats.gpu }, cpu: { ...stats.cpu } }
}

/** The CPU engine's addon with `matmul` routed by `dispatch` between the device and the CPU. */
export function routeGemm(native: NativeAddon, cuda: CudaAddon): NativeAddon {
  return {
    ...native,
    matmul: (a, b, c, batch, m, n, k, transA, transB, strideA, strideB) => {
      const flops = 2 * batch * m * n * k
      const bytes = 4 * ((batch - 1) * (strideA + strideB) + m * k + k * n + batch * m * n)
      const gpu = batch > 0 && flops >= dispatch.minFlops && flops >= dispatch.minFlopsPerByte * bytes
      const target = gpu ? cuda : native
      target.matmul(a, b, c, batch, m, n, k, transA, transB, strideA, strideB)
      const where = gpu ? stats.gpu : stats.cpu
      where.gemms += batch
      where.flops += flops
    },
  }
}

/** The storage of the `cuda` backend: the native backend's, over the routed addon. */
export class CudaBackend extends NativeBackend {
  constructor(
    native: NativeAddon,
    /** The CUDA addon products go to. */
    readonly cuda: CudaAddon,
  ) {
    super(routeGemm(native, cuda))
  }
}

const registered = new Set<string>()

/**
 * Registers a backend (default name `cuda`) once per name: the native backend's kernels, over a
 * `CudaBackend`. Activate it with `tf.setBackend(name)`. Another name and a stand-in addon are for
 * tests of the routing on machines without a device.
 */
export function registerCudaBackend(native: NativeAddon, cuda: CudaAddon, name: string = CUDA_BACKEND): void {
  if (registered.has(name)) return
  registered.add(name)
  registerNativeBackend(native)
  tf.registerBackend(name, () => new CudaBackend(native, cuda), 0)
  for (const k of tf.getKernelsForBackend(NATIVE_BACKEND)) tf.registerKernel({ ...k, backendName: name })
}

let reportOnExit = false

/**
 * Loads the CUDA addon and activates the `cuda` backend over the native engine's addon `native`
 * (for `chooseBackend`), reading the dispatch from `env`. @returns the tfjs backend name and the
 * device found.
 * @throws BackendActivationError with the reason there is no device (`no CUDA driver: ...`, `no
 * CUDA device: cudaGetDeviceCount returned ...`, `CUDA kernels not built: nvcc not found ...`) or
 * tfjs refused the backend; ConfigError when a dispatch variable of `env` is not a number >= 0.
 */
export async function activateCudaBackend(
  native: NativeAddon,
  env: Record<string, string | undefined> = process.env,
): Promise<{ tfBackend: string; device: CudaInit }> {
  const cuda = loadCudaAddon()
  if (!cuda.addon || !cuda.init) throw new BackendActivationError('cuda', cuda.reason ?? '')
  setCudaDispatch({
    minFlops: envNumber(env, CUDA_ENV.MinFlops, dispatch.minFlops),
    minFlopsPerByte: envNumber(env, CUDA_ENV.MinFlopsPerByte, dispatch.minFlopsPerByte),
  })
  registerCudaBackend(native, cuda.addon)
  if (!(await tf.setBackend(CUDA_BACKEND)))
    throw new BackendActivationError('cuda', 'cuda backend failed to initialise')
  if (env[CUDA_ENV.Report] && !reportOnExit) {
    reportOnExit = true
    const device = cuda.init
    const addon = cuda.addon
    process.on('exit', () => {
      const s = cudaDispatchStats()
      const d = addon.stats()
      const g = (x: number) => (x / 1e9).toFixed(1)
      process.stderr.write(
        `triad: cuda (${device.device}, sm ${device.computeCapability}): ${s.gpu.gemms} products on the device (${g(s.gpu.flops)} GFLOP, ${(d.bytesToDevice / 2 ** 20).toFixed(0)} MiB to it, ${(d.bytesFromDevice / 2 ** 20).toFixed(0)} MiB back), ${s.cpu.gemms} on the CPU (${g(s.cpu.flops)} GFLOP)\n`,
      )
    })
  }
  return { tfBackend: CUDA_BACKEND, device: cuda.init }
}
