import { totalmem } from 'node:os'
import type * as tf from '@tensorflow/tfjs'
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu'
import type { NativeAddon } from './native-addon.ts'

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

/** Arrays below this many elements are not recycled (allocating them costs less than tracking them). */
const POOL_MIN_ELEMENTS = 4096

/** Arrays above this many elements (64 MiB of float32) are pooled at their exact length (no rounding up). */
const POOL_EXACT_ELEMENTS = 1 << 24

/**
 * The length of the array that serves an output of `size` elements: `size` rounded up to one of 8
 * classes per power of two (at most 12.5% more), so outputs whose lengths vary a little from step
 * to step (micro-batches cut to their longest row) reuse each other's arrays; exact above
 * `POOL_EXACT_ELEMENTS`, where the rounding would cost more memory than the reuse saves.
 */
export function poolSizeClass(size: number): number {
  if (size < POOL_MIN_ELEMENTS || size > POOL_EXACT_ELEMENTS) return size
  const step = 2 ** Math.max(0, Math.floor(Math.log2(size)) - 3)
  return Math.ceil(size / step) * step
}

/** The pool's smallest bound on its free bytes: 1 GiB. */
export const POOL_MIN_MAX_BYTES = 2 ** 30

/**
 * The memory this process may use, in bytes: the cgroup's limit where one is set and lower than
 * the machine's memory (`process.constrainedMemory()`), else the machine's (`os.totalmem()`).
 */
export function processMemoryBytes(): number {
  const constrained = process.constrainedMemory?.() ?? 0
  return constrained > 0 && constrained < totalmem() ? constrained : totalmem()
}

/**
 * The default bound on the bytes of freed kernel outputs the backend keeps for reuse: a quarter of
 * `memory` (default: what the process may use, `processMemoryBytes`), and at least
 * `POOL_MIN_MAX_BYTES`. A LoRA step at the Qwen2.5-0.5B shape (2x512 tokens) frees about 4 GB of
 * intermediates a step: with a 1 GiB pool most of them came back as fresh pages every step, up to 1
 * million page faults and 13 s of system CPU a step, 24 to 31 s a step against 16.8 s with the pool
 * holding them (docs/native-engine.md, "The pool of free arrays").
 */
export function defaultPoolMaxBytes(memory = processMemoryBytes()): number {
  return Math.max(POOL_MIN_MAX_BYTES, Math.floor(memory / 4))
}

/**
 * The storage of the `native` backend: the cpu backend's, values read as typed arrays, and a pool
 * of recycled output arrays (a caching allocator, as PyTorch's): the arrays the native kernels
 * allocate (`allocate`) go back to the pool when the last tensor over them is disposed and serve
 * the next output of the same dtype and size class (`poolSizeClass`). A training step makes the same shapes every step,
 * so it reuses its arrays instead of leaving them to the garbage collector and paying fresh pages
 * (measured: the toy SFT step of `triad bench rl-step` went from 117 to 48 ms; docs/native-engine.md).
 * The pool holds at most `poolMaxBytes` (default `defaultPoolMaxBytes()`); a freed array that
 * would pass the bound first evicts the free arrays of the size classes freed longest ago (least
 * recently used first), so sizes that stopped recurring give their memory back and the ones a step
 * repeats stay; an array larger than the whole bound is left to the garbage collector.
 * Arrays that reach user code are copies (`readSync`), so a recycled array is never one a caller
 * still holds.
 */
export class NativeBackend extends MathBackendCPU {
  /** Buffers of the arrays `allocate` made, with the original array and its count of live tensors over it. */
  private readonly owned = new WeakMap<
    ArrayBufferLike,
    { array: Float32Array | Int32Array; owners: number }
  >()
  /** Free arrays by `dtype:length`, the size class freed longest ago first (a Map keeps insertion order). */
  private readonly pool = new Map<string, (Float32Array | Int32Array)[]>()
  private pooledBytes = 0
  /** The most bytes of free arrays the pool keeps (see the class comment); a setting of this backend. */
  poolMaxBytes = defaultPoolMaxBytes()

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

  /**
   * A zero-filled float32 or int32 array of `size` elements for a kernel's output: a view of the
   * first `size` elements of a recycled array of its size class (`poolSizeClass`) where the pool has
   * one, else of a new one.
   */
  allocate(dtype: 'float32' | 'int32', size: number): Float32Array | Int32Array {
    if (size < POOL_MIN_ELEMENTS) return dtype === 'int32' ? new Int32Array(size) : new Float32Array(size)
    const length = poolSizeClass(size)
    const reused = this.pool.get(`${dtype}:${length}`)?.pop()
    let array: Float32Array | Int32Array
    if (reused) {
      this.pooledBytes -= reused.byteLength
      array = reused
    } else {
      array = dtype === 'int32' ? new Int32Array(length) : new Float32Array(length)
      this.owned.set(array.buffer, { array, owners: 0 })
    }
    // the output is the first `size` elements (a view when the class is longer)
    const out = length === size ? array : array.subarray(0, size)
    if (reused) out.fill(0)
    return out
  }

  /**
   * Whether `t` is the only tensor over its array: its data has one reference and, where the array
   * is the pool's, no other tensor data (a view or a reshape) is over the same buffer. A kernel may
   * then write its output over `t`'s values when the caller says it needs `t` no more.
   */
  soleHolder(t: tf.TensorInfo): boolean {
    if (!this.data.has(t.dataId) || this.refCount(t.dataId) !== 1) return false
    const values = this.data.get(t.dataId).values
    if (!ArrayBuffer.isView(values)) return false
    return this.owned.get(values.buffer)?.owners === 1
  }

  /** Bytes held in the pool of free arrays now. */
  pooledByteCount(): number {
    return this.pooledBytes
  }

  override write(values: tf.backend_util.BackendValues, shape: number[], dtype: tf.DataType): tf.DataId {
    this.claim(values)
    return super.write(values, shape, dtype)
  }

  override move(
    dataId: tf.DataId,
    values: tf.backend_util.BackendValues,
    shape: number[],
    dtype: tf.DataType,
    refCount: number,
  ): void {
    this.claim(values)
    super.move(dataId, values, shape, dtype, refCount)
  }

  override disposeData(dataId: tf.DataId, force = false): boolean {
    const values = this.data.has(dataId) ? this.data.get(dataId).values : undefined
    const removed = super.disposeData(dataId, force)
    if (!removed || this.data.has(dataId) || !values || !ArrayBuffer.isView(values)) return removed
    const own = this.owned.get(values.buffer)
    if (own && --own.owners === 0) this.recycle(own.array)
    return removed
  }

  /** The values of a tensor for a caller: a copy where the array is the pool's, so it is never recycled under them. */
  override readSync(dataId: tf.DataId): tf.backend_util.BackendValues {
    const values = super.readSync(dataId)
    return ArrayBuffer.isView(values) && this.owned.has(values.buffer)
      ? (values as Float32Array | Int32Array).slice()
      : values
  }

  /** Counts one more tensor data over `values` where they are (a view of) an array `allocate` made. */
  private claim(values: tf.backend_util.BackendValues): void {
    const own = ArrayBuffer.isView(values) ? this.owned.get(values.buffer) : undefined
    if (own) own.owners++
  }

  /** Drops every free array of the pool (to the garbage collector), as PyTorch's `empty_cache`. */
  emptyPool(): void {
    this.evict(this.pooledBytes)
  }

  /** Drops free arrays, the size classes freed longest ago first, until `bytes` more are dropped (or none is left). */
  private evict(bytes: number): void {
    const target = this.pooledBytes - bytes
    for (const [key, arrays] of this.pool) {
      while (arrays.length > 0 && this.pooledBytes > target) this.pooledBytes -= arrays.shift()!.byteLength
      if (arrays.length === 0) this.pool.delete(key)
      if (this.pooledBytes <= target) break
    }
  }

  private recycle(array: Float32Array | Int32Array): void {
    if (array.byteLength > this.poolMaxBytes) return // left to the garbage collector
    const over = this.pooledBytes + array.byteLength - this.poolMaxBytes
    if (over > 0) this.evict(over)
    const key = `${array instanceof Int32Array ? 'int32' : 'float32'}:${array.length}`
    const free = this.pool.get(key) ?? []
    this.pool.delete(key) // re-inserted last: the most recently freed size class
    this.pool.set(key, free)
    free.push(array)
    this.pooledBytes += array.byteLength
  }
}
