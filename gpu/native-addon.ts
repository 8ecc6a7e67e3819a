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
  /**
   * Which GEMM serves `matmul`: triad's packed microkernel (`own`), the loaded BLAS (`blas`), or
   * `auto` (the default): the BLAS for products of more than 16 rows where one loaded, triad's own
   * kernels below (generation's few rows, where they measured faster). The BLAS runs one thread per
   * task of triad's pool. @throws Error for `blas` without a loaded BLAS.
   */
  setGemm(gemm: 'own' | 'blas' | 'auto'): void
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
  /** RMSNorm of `rows` rows of `d` values: `y = x / sqrt(mean(x^2) + eps) * g`; g `[d]`. */
  rmsNorm(x: Float32Array, g: Float32Array, y: Float32Array, rows: number, d: number, eps: number): void
  /** RMSNorm's gradient: dx `[rows*d]` and dg `[d]` from dy, x, g. */
  rmsNormGrad(
    dy: Float32Array,
    x: Float32Array,
    g: Float32Array,
    dx: Float32Array,
    dg: Float32Array,
    rows: number,
    d: number,
    eps: number,
  ): void
  /** `out = silu(gate) * up` over `n` values. */
  swiglu(gate: Float32Array, up: Float32Array, out: Float32Array, n: number): void
  /** The gradient of `swiglu`: dgate and dup from dh. */
  swigluGrad(
    dh: Float32Array,
    gate: Float32Array,
    up: Float32Array,
    dgate: Float32Array,
    dup: Float32Array,
    n: number,
  ): void
  /** Rotary positions of x `[n, h, hd]` with tables `[n, hd]`; `backward` gives dx from dy (passed as x). */
  rope(
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    y: Float32Array,
    n: number,
    h: number,
    hd: number,
    backward: boolean,
  ): void
  /** `out[r] = logits[r, targets[r]] - logsumexp(logits[r])` for `rows` rows of `vocab` logits. */
  tokenLogprob(
    logits: Float32Array,
    targets: Int32Array,
    out: Float32Array,
    rows: number,
    vocab: number,
  ): void
  /**
   * Entropy of each row's softmax, `out[r] = -sum_j p_j log p_j` with `p = softmax(logits[r])`, for
   * `rows` rows of `vocab` logits (NaN for a row whose max is not finite).
   */
  tokenEntropy(logits: Float32Array, out: Float32Array, rows: number, vocab: number): void
  /** `sum_i x[i]^2` over the first `n` values, added up in double. */
  sumSquares(x: Float32Array, n: number): number
  /** The gradient of `tokenLogprob`: `dlogits = dlogp (onehot - softmax)`. */
  tokenLogprobGrad(
    dlogp: Float32Array,
    logits: Float32Array,
    targets: Int32Array,
    dlogits: Float32Array,
    rows: number,
    vocab: number,
  ): void
  /**
   * AdamW in place on `n` values (Loshchilov & Hutter 2019): `m = b1 m + (1-b1) g c`,
   * `v = b2 v + (1-b2) (g c)^2`, `p = p (1 - lr decay) - lr (m / bias1) / (sqrt(v / bias2) + eps)`,
   * `c` the clip scale.
   */
  adamw(
    p: Float32Array,
    m: Float32Array,
    v: Float32Array,
    g: Float32Array,
    n: number,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    decay: number,
    bias1: number,
    bias2: number,
    clipScale: number,
  ): void
  /**
   * Transposition: `out` = `x` (`shape`, row-major) with its axes permuted, `out.shape[k] =
   * shape[perm[k]]`; x and out float32 or int32 (read as 32-bit words), prod(shape) elements;
   * shape and perm int32, rank <= 16.
   */
  transpose(
    x: Float32Array | Int32Array,
    out: Float32Array | Int32Array,
    shape: Int32Array,
    perm: Int32Array,
  ): void
  /**
   * Strided copy of 32-bit words: for every index `i` of `shape` (rank <= 16),
   * `dst[dstOffset + i . dstStrides] = src[srcOffset + i . srcStrides]`; strides may be negative,
   * a source stride 0 repeats. Throws a `TypeError` when either view leaves its array.
   */
  stridedCopy(
    src: Float32Array | Int32Array,
    srcOffset: number,
    dst: Float32Array | Int32Array,
    dstOffset: number,
    shape: Int32Array,
    srcStrides: Int32Array,
    dstStrides: Int32Array,
  ): void
  /** `out` `[rows, sum(widths)]` = the `parts` `[rows, widths[k]]` side by side (32-bit words). */
  concat(
    parts: (Float32Array | Int32Array)[],
    widths: Int32Array,
    out: Float32Array | Int32Array,
    rows: number,
  ): void
  /** The column blocks of `x` `[rows, sum(widths)]` into `parts` `[rows, widths[k]]` (32-bit words). */
  split(
    x: Float32Array | Int32Array,
    rows: number,
    parts: (Float32Array | Int32Array)[],
    widths: Int32Array,
  ): void
  /**
   * `out[b, o, i, s] = x[b, o, indices[b, i], s]`, x `[batch, outer, dim, slice]`, indices int32
   * `[batch, n]`, out `[batch, outer, n, slice]` (32-bit words). Throws an `Error` naming the first
   * index outside `[0, dim)` before writing.
   */
  gather(
    x: Float32Array | Int32Array,
    indices: Int32Array,
    out: Float32Array | Int32Array,
    batch: number,
    outer: number,
    dim: number,
    slice: number,
    n: number,
  ): void
  /**
   * Scatter-add: `out` `[segments, inner]` = 0, then `out[ids[i]] += x[i]` for each row `i < n` of
   * x `[n, inner]` in order (ids outside `[0, segments)` dropped); float32 x and out, int32 ids.
   */
  unsortedSegmentSum(
    x: Float32Array,
    ids: Int32Array,
    out: Float32Array,
    n: number,
    inner: number,
    segments: number,
  ): void
  /**
   * `out[o, i]` = a reduction over `j` of `x[o, j, i]`, x `[outer, r, inner]` float32 (int32 when
   * `isInt`), out `[outer, inner]`; `op` 0 Sum, 1 Mean, 2 Max, 3 Min, 4 Prod (out like x, Mean's
   * float32; sums and products accumulate in double), 5 ArgMax, 6 ArgMin (out int32, the first
   * extreme). Max and Min give NaN when a NaN is reduced; they and the arg ops need `r >= 1`.
   */
  reduce(
    x: Float32Array | Int32Array,
    out: Float32Array | Int32Array,
    outer: number,
    r: number,
    inner: number,
    op: number,
    isInt: boolean,
  ): void
  /**
   * Attention forward in one pass: `out[r, i] = softmax(q[r, i] k[r]^T + mask[b(r), i mod steps]) v[r]`
   * with q and out `[groups, rows, headDim]`, k and v `[groups, keys, headDim]`, the additive mask
   * `[maskBatch, steps, keys]`, `b(r) = floor(r / kvHeads)` when maskBatch > 1 (else 0); float32.
   */
  attention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    mask: Float32Array,
    out: Float32Array,
    groups: number,
    rows: number,
    keys: number,
    headDim: number,
    steps: number,
    maskBatch: number,
    kvHeads: number,
  ): void
  /** Softmax of each row of x `[rows, cols]` float32 into out: `exp(x - max) / sum exp(x - max)`. */
  softmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void
  /**
   * `out = op(a, b)` elementwise with broadcasting, the walk given by `plan` (Int32Array
   * `[rank, dims..., strides of a..., strides of b...]`, outermost first, innermost strides 0 or 1:
   * `broadcastPlan` in native-kernels/elementwise.ts); `a` and `b` of one element type. `op` is an
   * index of `BINARY_SPECS` there: arithmetic (Float32Array, some Int32Array) writes the operands'
   * type, comparisons and logical ops write 0/1 into a Uint8Array.
   */
  binary(op: number, a: NativeArray, b: NativeArray, out: NativeArray, plan: Int32Array): void
  /**
   * `out[i] = op(x[i])` over x's length, `op` an index of `UNARY_SPECS` in
   * native-kernels/elementwise.ts: Float32Array to Float32Array (math) or to Uint8Array (IsNan,
   * IsFinite, IsInf), Uint8Array to Uint8Array (LogicalNot); `p0`, `p1` the op's attributes
   * (Step/LeakyRelu alpha; ClipByValue min, max), else ignored.
   */
  unary(op: number, x: NativeArray, out: NativeArray, p0: number, p1: number): void
  /**
   * `out[i] = x[i]` converted between Float32Array, Int32Array and Uint8Array (bool), as tfjs's cpu
   * Cast: to int32 by JavaScript's ToInt32 (truncate, wrap, NaN -> 0), to bool as `x != 0`.
   */
  cast(x: NativeArray, out: NativeArray): void
  /** `out[i] = cond[i] === 1 ? t[i] : e[i]` over cond's length; t, e, out of one element type. */
  select(cond: Uint8Array, t: NativeArray, e: NativeArray, out: NativeArray): void
  /** `out = ((0 + inputs[0]) + inputs[1]) + ...` elementwise; every array of out's type and length. */
  addN(inputs: (Float32Array | Int32Array)[], out: Float32Array | Int32Array): void
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
  /** The GEMM in use: `own`, `blas` or `auto` (see `setGemm`); `own` where no BLAS loaded. */
  gemm: string
  /** `built` when compiled with CUDA kernels, else `''`. */
  cuda: string
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** Where `npm ci` builds the addon: `gpu/native/build` (its `Release/triad_native.node` and `status.json`). */
export const NATIVE_BUILD_DIR = path.join(here, 'native', 'build')
/** The addon `npm ci` builds. */
export const NATIVE_ADDON_PATH = path.join(NATIVE_BUILD_DIR, 'Release', 'triad_native.node')
/**
 * Environment variable naming another build directory to load the addon from (its
 * `Release/triad_native.node`, else the reason in its `status.json`): a build made elsewhere, or a
 * test's. Default `NATIVE_BUILD_DIR`.
 */
export const NATIVE_DIR_ENV = 'TRIAD_NATIVE_DIR'

/** Options of `loadNativeAddon`. */
export interface LoadNativeAddonOptions {
  /** Build directory (holding `Release/triad_native.node` and `status.json`); default `NATIVE_BUILD_DIR`. */
  dir?: string
}

/** What `loadNativeAddon` found: the addon, or the one-line reason it is not there. */
export interface LoadedNativeAddon {
  addon?: NativeAddon
  reason?: string
}

const loaded = new Map<string, LoadedNativeAddon>()

/**
 * Loads the addon of a build directory once (later calls return the same answer). The reason, when
 * there is no addon file, is the build's own from `status.json` (`build failed: ...`, `build
 * skipped ...`, written by `gpu/native/build.mjs`), else `not built (run \`npm run build:native\`)`;
 * an addon file that does not load gives `failed to load FILE: ...`. Never throws.
 */
export function loadNativeAddon(options: LoadNativeAddonOptions = {}): LoadedNativeAddon {
  const dir = path.resolve(options.dir ?? NATIVE_BUILD_DIR)
  const known = loaded.get(dir)
  if (known) return known
  const file = path.join(dir, 'Release', 'triad_native.node')
  let result: LoadedNativeAddon
  if (!existsSync(file)) {
    let reason = 'not built (run `npm run build:native`)'
    try {
      const status = JSON.parse(readFileSync(path.join(dir, 'status.json'), 'utf8')) as {
        ok?: boolean
        reason?: string
      }
      if (typeof status.reason === 'string' && status.reason) reason = status.reason.split('\n')[0]!
    } catch {}
    result = { reason }
  } else
    try {
      result = { addon: createRequire(import.meta.url)(file) as NativeAddon }
    } catch (err) {
      result = { reason: `failed to load ${file}: ${(err as Error).message.split('\n')[0]}` }
    }
  loaded.set(dir, result)
  return result
}

/** A typed array the elementwise kernels take: float32, int32, or bool (stored as 0/1 bytes). */
export type NativeArray = Float32Array | Int32Array | Uint8Array
