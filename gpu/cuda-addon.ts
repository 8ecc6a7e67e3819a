import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { NativeAddon } from './native-addon.ts'

/**
 * The CUDA engine's compiled addon (`gpu/native/cuda`, built by `gpu/native/build.mjs` with nvcc
 * where nvcc is found; a separate addon from the CPU engine's, with libcudart linked statically).
 * Its kernels take host typed arrays, copy them to the device, run there and copy the result back.
 */
export interface CudaAddon {
  /**
   * Finds the device, once per process (later calls return the same answer): the driver library
   * must load, `cudaGetDeviceCount` must find a device and a small product run on it must match
   * the host's. Never throws.
   */
  init(): CudaInit
  /**
   * The CPU engine's `matmul` (same arguments, same checks), run on the device: `batch` row-major
   * products `c[i] = op(a[i]) op(b[i])`. Synchronous.
   * @throws Error with `init()`'s reason when there is no device, or naming the CUDA call that failed.
   */
  matmul(...args: Parameters<NativeAddon['matmul']>): void
  /** Counters since the process started. */
  stats(): CudaStats
  /** Frees the device buffers kept between products. */
  release(): void
}

/** `CudaAddon.init()`. */
export interface CudaInit {
  /** Whether a device is usable. */
  ok: boolean
  /** Why not, in one line (`no CUDA driver: ...`, `no CUDA device: cudaGetDeviceCount returned ...`); `''` when ok. */
  reason: string
  /** Device 0's name (`NVIDIA H200`), `''` when none. */
  device: string
  /** `9.0` for Hopper; `''` when none. */
  computeCapability: string
  multiprocessors: number
  memoryBytes: number
  /** CUDA version the driver supports and the runtime was built with, e.g. 13000 for 13.0 (0 when unknown). */
  driverVersion: number
  runtimeVersion: number
  /** Targets compiled in (`sm_80 sm_90 compute_75`). */
  archs: string
}

/** `CudaAddon.stats()`: what has run on the device. */
export interface CudaStats {
  /** Matrix products (each matrix of a batch counts once). */
  gemms: number
  flops: number
  bytesToDevice: number
  bytesFromDevice: number
  /** Device memory held for operands, reused between products. */
  scratchBytes: number
}

/** The CUDA build's entry in `gpu/native/build/status.json` (written by `gpu/native/build.mjs`). */
export interface CudaBuildStatus {
  ok: boolean
  /** Why it was not built (`nvcc not found ...`, `build failed: ...`). */
  reason?: string
  seconds?: number
  /** Whether an unchanged earlier build was kept. */
  cached?: boolean
  /** nvcc's release (`13.0`). */
  nvcc?: string
  archs?: string
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** Where `gpu/native/build.mjs` builds the CUDA addon. */
export const CUDA_ADDON_PATH = path.join(here, 'native', 'cuda', 'build', 'triad_cuda.node')
const STATUS_PATH = path.join(here, 'native', 'build', 'status.json')

/** The CUDA entry of the last native build's status, or `undefined` when it has none (older build, or none). */
export function readCudaBuildStatus(): CudaBuildStatus | undefined {
  try {
    const status = JSON.parse(readFileSync(STATUS_PATH, 'utf8')) as { cuda?: CudaBuildStatus }
    return status.cuda && typeof status.cuda.ok === 'boolean' ? status.cuda : undefined
  } catch {
    return undefined
  }
}

/** What `loadCudaAddon` found: the addon and its device, or the one-line reason there is neither. */
export interface LoadedCudaAddon {
  /** The addon, when it loaded and found a device. */
  addon?: CudaAddon
  /** Its `init()`, when it loaded (whether or not a device was found). */
  init?: CudaInit
  reason?: string
}

let loaded: LoadedCudaAddon | undefined

/**
 * Loads the CUDA addon and finds its device, once. The reason, when there is no addon file, is
 * the build's own (`status.json`'s `cuda.reason`: `nvcc not found ...`, `build failed: ...`); when
 * the addon loads but finds no device, it is `init()`'s. Never throws.
 */
export function loadCudaAddon(): LoadedCudaAddon {
  if (loaded) return loaded
  if (!existsSync(CUDA_ADDON_PATH)) {
    const status = readCudaBuildStatus()
    loaded = {
      reason: status?.reason
        ? `CUDA kernels not built: ${status.reason.split('\n')[0]}`
        : 'CUDA kernels not built (run `npm run build:native` where nvcc is installed)',
    }
    return loaded
  }
  let addon: CudaAddon
  try {
    addon = createRequire(import.meta.url)(CUDA_ADDON_PATH) as CudaAddon
  } catch (err) {
    loaded = { reason: `failed to load ${CUDA_ADDON_PATH}: ${(err as Error).message.split('\n')[0]}` }
    return loaded
  }
  const init = addon.init()
  loaded = init.ok ? { addon, init } : { init, reason: init.reason }
  return loaded
}
