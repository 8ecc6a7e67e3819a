import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The native engine's compiled addon (`gpu/native`, C++ built by node-gyp while `npm ci` runs
 * `gpu/native/build.mjs`). Every kernel takes float32 (or int32) typed arrays and writes into an
 * output array the caller allocated; sizes are element counts; it throws a `TypeError` naming the
 * argument on a wrong type or a too-short array. Work is spread over the engine's thread pool.
 */
export interface NativeAddon {
  /** What the addon was built with and runs on. */
  info(): NativeInfo
  /** Threads of the engine's pool, the caller's included (1 to 1024). */
  setThreads(threads: number): void
  /** Which GEMM serves `matmul`: triad's packed microkernel (`own`) or the loaded BLAS (`blas`). */
  setGemm(gemm: 'own' | 'blas'): void
  /**
   * `batch` row-major products `c[i] = op(a[i]) op(b[i])`, `op(a[i])` `[m, k]` (stored `[k, m]`
   * when `transA`), `op(b[i])` `[k, n]` (stored `[n, k]` when `transB`), `c[i]` `[m, n]` at `i*m*n`;
   * `a[i]` starts at `i * strideA` elements (0 broadcasts one matrix), `b[i]` at `i * strideB`.
   */
  matmul(
    a: Float32Array,
    b: Float32Array,
    c: Float32Array,
    batch: number,
    m: number,
    n: number,
    k: number,
    transA: boolean,
    transB: boolean,
    strideA: number,
    strideB: number,
  ): void
}

/** `NativeAddon.info()`. */
export interface NativeInfo {
  /** SIMD instruction set the kernels were compiled for: `avx512`, `avx2` or `sse`. */
  simd: string
  /** Threads of the pool now. */
  threads: number
  /** Hardware threads of the machine. */
  hardwareThreads: number
  /** The BLAS library loaded at start (`libopenblas.so.0`), or `''` for none. */
  blas: string
  /** The GEMM in use: `own` or `blas`. */
  gemm: string
  /** `built` when compiled with CUDA kernels, else `''`. */
  cuda: string
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** Where `npm ci` builds the addon. */
export const NATIVE_ADDON_PATH = path.join(here, 'native', 'build', 'Release', 'triad_native.node')
const STATUS_PATH = path.join(here, 'native', 'build', 'status.json')

let loaded: { addon?: NativeAddon; reason?: string } | undefined

/**
 * Loads the addon once. @returns the addon, or the one-line reason it is not there (the build's own
 * reason from `gpu/native/build/status.json` when the build failed or was skipped).
 */
export function loadNativeAddon(): { addon?: NativeAddon; reason?: string } {
  if (loaded) return loaded
  if (!existsSync(NATIVE_ADDON_PATH)) {
    let reason = 'not built (run `npm run build:native`)'
    try {
      const status = JSON.parse(readFileSync(STATUS_PATH, 'utf8')) as { ok?: boolean; reason?: string }
      if (status.reason) reason = status.reason
    } catch {}
    loaded = { reason }
    return loaded
  }
  try {
    loaded = { addon: createRequire(import.meta.url)(NATIVE_ADDON_PATH) as NativeAddon }
  } catch (err) {
    loaded = { reason: `failed to load ${NATIVE_ADDON_PATH}: ${(err as Error).message.split('\n')[0]}` }
  }
  return loaded
}
