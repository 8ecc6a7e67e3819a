import * as tf from '@tensorflow/tfjs'
import { NativeBackend } from './native-backend.ts'
import type { PrefixEntry } from './prefix-cache.ts'

/**
 * Columns a cache grows by on a backend that writes in place: its capacity is the cached length
 * rounded up to a multiple of this, so a generation step copies one token's keys and values, and
 * the whole cache once every `KV_CACHE_CHUNK` tokens (measured on the toy model of `triad bench
 * model`, batch 32: the per-step concatenation was a third of a generation's time;
 * docs/native-engine.md).
 */
export const KV_CACHE_CHUNK = 64

/** The native engine's storage where the active backend is it (keys are then written in place), else undefined. */
function inPlaceStorage(): NativeBackend | undefined {
  const backend = tf.backend()
  return backend instanceof NativeBackend ? backend : undefined
}

/**
 * Key-value cache of a transformer: per layer the rotated keys and the values of every token seen
 * so far, `[batch*kvHeads, length, headDim]` float32, and which of those tokens are real
 * (`keyMask`, `[batch, length]`, 1 real / 0 padding). `forward` reads and extends it, so a
 * generation step costs one token's work instead of the whole prefix.
 *
 * On the native engine (and the cuda one over it) each layer's tensors hold `capacity` columns, at
 * least `length`, of which the first `length` are the cache; a step writes its keys into the free
 * columns in place, and grows the tensors by `KV_CACHE_CHUNK` columns when they are full. The layers
 * then see `capacity` keys, and `hiddenStates` masks the free ones (`keyLength`). Elsewhere tensors
 * are replaced (tfjs tensors are immutable): each step concatenates the new keys and frees the old
 * ones, and `capacity` equals `length`. Call `dispose()` when done.
 */
export class KvCache {
  /** Number of sequences (rows; `RaggedKvCache` changes it as rows join and leave). */
  batch: number
  /** Tokens cached so far (the same for every sequence; padding counts). */
  length = 0
  protected readonly keys: (tf.Tensor3D | undefined)[]
  protected readonly values: (tf.Tensor3D | undefined)[]
  protected mask: tf.Tensor2D | undefined
  /** Materialise the key mask even while every token is real. */
  private readonly alwaysMask: boolean

  /** @param options.alwaysMask keep a key mask even while every token is real (default false). */
  constructor(layers: number, batch: number, options: { alwaysMask?: boolean } = {}) {
    this.batch = batch
    this.keys = new Array(layers).fill(undefined)
    this.values = new Array(layers).fill(undefined)
    this.alwaysMask = options.alwaysMask ?? false
  }

  /** Columns each layer's tensors hold (at least `length`; more only where appends write in place). */
  get capacity(): number {
    return this.keys[0]?.shape[1] ?? 0
  }

  /**
   * How many keys the layers see once `steps` more tokens are appended: `length + steps` where
   * appends concatenate; the capacity then, where they write in place (the columns past
   * `length + steps` are free and must be masked).
   */
  keyLength(steps: number): number {
    const need = this.length + steps
    if (!inPlaceStorage()) return need
    return need <= this.capacity ? this.capacity : Math.ceil(need / KV_CACHE_CHUNK) * KV_CACHE_CHUNK
  }

  /**
   * Appends layer `layer`'s new keys and values `[batch*kvHeads, steps, headDim]` and returns the
   * full ones `[batch*kvHeads, keyLength(steps), headDim]` (the first `length + steps` columns are
   * the keys so far). The returned tensors are owned by the cache and valid until the next append.
   */
  append(layer: number, k: tf.Tensor3D, v: tf.Tensor3D): [tf.Tensor3D, tf.Tensor3D] {
    const storage = inPlaceStorage()
    if (storage) return this.appendInPlace(storage, layer, k, v)
    const oldK = this.keys[layer]
    const oldV = this.values[layer]
    const fullK = tf.keep(oldK ? tf.concat([oldK, k], 1) : k.clone())
    const fullV = tf.keep(oldV ? tf.concat([oldV, v], 1) : v.clone())
    oldK?.dispose()
    oldV?.dispose()
    this.keys[layer] = fullK
    this.values[layer] = fullV
    return [fullK, fullV]
  }

  /** `append` on the native engine: the new columns are written into free ones, grown when full. */
  private appendInPlace(
    storage: NativeBackend,
    layer: number,
    k: tf.Tensor3D,
    v: tf.Tensor3D,
  ): [tf.Tensor3D, tf.Tensor3D] {
    const [rows, steps, hd] = k.shape
    const at = this.length
    const columns = this.keyLength(steps)
    const write = (tensors: (tf.Tensor3D | undefined)[], fresh: tf.Tensor3D): tf.Tensor3D => {
      let store = tensors[layer]
      if (!store || store.shape[1] !== columns || store.shape[0] !== rows) {
        const grown = new Float32Array(rows * columns * hd)
        if (store) {
          if (at > 0)
            storage.addon.stridedCopy(
              storage.values(store) as Float32Array,
              0,
              grown,
              0,
              Int32Array.of(rows, at * hd),
              Int32Array.of(store.shape[1] * hd, 1),
              Int32Array.of(columns * hd, 1),
            )
          store.dispose()
        }
        store = tf.keep(tf.tensor3d(grown, [rows, columns, hd]))
        tensors[layer] = store
      }
      // rows of `steps * hd` values into columns [at, at + steps) of each row
      storage.addon.stridedCopy(
        storage.values(fresh) as Float32Array,
        0,
        storage.values(store) as Float32Array,
        at * hd,
        Int32Array.of(rows, steps * hd),
        Int32Array.of(steps * hd, 1),
        Int32Array.of(columns * hd, 1),
      )
      return store
    }
    return [write(this.keys, k), write(this.values, v)]
  }

  /** Cuts each layer's tensors to the `length` cached columns (the form the ragged operations take). */
  protected compact(): void {
    if (this.capacity === this.length) return
    const cut = (t: tf.Tensor3D | undefined) => {
      if (!t) return t
      const tight = tf.keep(tf.slice(t, [0, 0, 0], [t.shape[0], this.length, t.shape[2]]))
      t.dispose()
      return tight
    }
    for (let l = 0; l < this.keys.length; l++) {
      this.keys[l] = cut(this.keys[l])
      this.values[l] = cut(this.values[l])
    }
  }

  /**
   * The key mask `[batch, length + steps]` after appending `steps` tokens whose mask is `next`
   * (`[batch, steps]`, default all real); undefined while every token is real (unless `alwaysMask`).
   * Kept by the cache.
   */
  extendKeyMask(next: tf.Tensor2D | undefined, steps: number): tf.Tensor2D | undefined {
    if (!next && !this.mask && !this.alwaysMask) return undefined
    const old = this.mask ?? tf.ones([this.batch, this.length], 'float32')
    const add = next ? next.toFloat() : tf.ones([this.batch, steps], 'float32')
    const full = tf.keep(tf.concat([old, add], 1) as tf.Tensor2D)
    this.mask?.dispose()
    this.mask = full
    return full
  }

  /** Records that `steps` tokens were appended (called by `forward` after every layer appended). */
  advance(steps: number): void {
    this.length += steps
  }

  /** Frees every cached tensor. */
  dispose(): void {
    for (const t of [...this.keys, ...this.values, this.mask]) t?.dispose()
    this.keys.fill(undefined)
    this.values.fill(undefined)
    this.mask = undefined
    this.length = 0
  }
}

/**
 * The KV cache of continuous batching (`continuous-batching.ts`): rows of different lengths share
 * one tensor per layer, `[rows*heads, length, headDim]` float32, right-aligned (left padding), with
 * the key mask `[rows, length]` always materialised (padding is the normal case here). Rows join
 * (`merge`, from a prefill's cache) and leave (`select`) between passes, so `batch` changes; a
 * finished row's keys and values can be copied out for the prefix cache (`extractRow`). `forward`
 * reads and extends it as any `KvCache`.
 */
export class RaggedKvCache extends KvCache {
  constructor(
    readonly layers: number,
    /** Key-value heads per row (`kvHeads`). */
    readonly heads: number,
  ) {
    super(layers, 0, { alwaysMask: true })
  }

  private replace(layer: number, k: tf.Tensor3D, v: tf.Tensor3D): void {
    this.keys[layer]?.dispose()
    this.values[layer]?.dispose()
    this.keys[layer] = tf.keep(k)
    this.values[layer] = tf.keep(v)
  }

  private replaceMask(m: tf.Tensor2D): void {
    this.mask?.dispose()
    this.mask = tf.keep(m)
  }

  /**
   * A cache for a prefill chunk whose rows start from cached prefixes (undefined: none): each row's
   * prefix right-aligned in `length` columns, the rest masked.
   */
  static fromPrefixes(layers: number, heads: number, parts: (PrefixEntry | undefined)[]): RaggedKvCache {
    const store = new RaggedKvCache(layers, heads)
    store.batch = parts.length
    const length = Math.max(0, ...parts.map((p) => p?.tokens.length ?? 0))
    if (length === 0) return store
    const hd = parts.find((p) => p)!.keys[0]!.shape[2]
    tf.tidy(() => {
      const rowOf = (p: PrefixEntry | undefined, t: tf.Tensor3D | undefined) =>
        p && t
          ? tf.pad(t, [
              [0, 0],
              [length - p.tokens.length, 0],
              [0, 0],
            ])
          : tf.zeros([heads, length, hd])
      for (let l = 0; l < layers; l++)
        store.replace(
          l,
          tf.concat(
            parts.map((p) => rowOf(p, p?.keys[l])),
            0,
          ) as tf.Tensor3D,
          tf.concat(
            parts.map((p) => rowOf(p, p?.values[l])),
            0,
          ) as tf.Tensor3D,
        )
      const mask = new Float32Array(parts.length * length)
      for (const [i, p] of parts.entries())
        mask.fill(1, (i + 1) * length - (p?.tokens.length ?? 0), (i + 1) * length)
      store.replaceMask(tf.tensor2d(mask, [parts.length, length]))
    })
    store.length = length
    return store
  }

  /**
   * Copies out row `row`'s real keys and values (`[heads, count, headDim]` per layer), or undefined
   * when its mask does not hold exactly `count` real tokens.
   */
  extractRow(row: number, count: number): { keys: tf.Tensor3D[]; values: tf.Tensor3D[] } | undefined {
    if (!this.mask || count === 0) return undefined
    this.compact()
    const h = this.heads
    const len = this.length
    const maskRow = tf.slice(this.mask, [row, 0], [1, len])
    const m = maskRow.dataSync()
    maskRow.dispose()
    const cols: number[] = []
    for (let k = 0; k < len; k++) if (m[k]! > 0.5) cols.push(k)
    if (cols.length !== count) return undefined
    // Real columns form a few contiguous runs (a cached prefix, then a gap, then the rest):
    // slice each and join them (a gather over columns is far slower on the wasm backend).
    const runs: [number, number][] = []
    for (const c of cols) {
      const last = runs[runs.length - 1]
      if (last && last[1] === c) last[1] = c + 1
      else runs.push([c, c + 1])
    }
    return tf.tidy(() => {
      // The row's block by gather (cost ~ its size), then columns from that small tensor: a slice
      // of the big tensor copies all of it on the wasm backend.
      const heads = tf.tensor1d(
        Int32Array.from({ length: h }, (_, k) => row * h + k),
        'int32',
      )
      const part = (t: tf.Tensor3D) => {
        const hd = t.shape[2]
        const block = tf.gather(t, heads, 0) as tf.Tensor3D
        const pieces = runs.map(([a, b]) => tf.slice(block, [0, a, 0], [h, b - a, hd]) as tf.Tensor3D)
        return pieces.length === 1 ? pieces[0]! : (tf.concat(pieces, 1) as tf.Tensor3D)
      }
      return {
        keys: this.keys.map((k) => part(k!)),
        values: this.values.map((v) => part(v!)),
      }
    })
  }

  /** Keeps only rows `keep` (ascending), then drops leading columns that are padding in every row. */
  select(keep: readonly number[], longest: number): void {
    this.compact()
    const drop = this.length - longest
    const h = this.heads
    // Contiguous runs of kept rows: slices along the outer axis and one concat are plain copies
    // (a 4-D gather is far slower on the wasm backend).
    const runs: [number, number][] = []
    for (const i of keep) {
      const last = runs[runs.length - 1]
      if (last && last[1] === i) last[1] = i + 1
      else runs.push([i, i + 1])
    }
    const cut = <T extends tf.Tensor>(t: T, per: number): T => {
      const parts = runs.map(([a, b]) => {
        const begin = t.shape.map(() => 0)
        const size = [...t.shape]
        begin[0] = a * per
        size[0] = (b - a) * per
        begin[1] = drop
        size[1] = t.shape[1]! - drop
        return tf.slice(t, begin, size)
      })
      return (parts.length === 1 ? parts[0]! : tf.concat(parts, 0)) as T
    }
    tf.tidy(() => {
      for (let l = 0; l < this.layers; l++) this.replace(l, cut(this.keys[l]!, h), cut(this.values[l]!, h))
      this.replaceMask(cut(this.mask!, 1))
    })
    this.length -= drop
    this.batch = keep.length
  }

  /** Appends the rows of `other` (left-padding whichever is shorter); frees `other`. */
  merge(other: RaggedKvCache): void {
    this.compact()
    other.compact()
    if (this.keys[0] === undefined) {
      for (let l = 0; l < this.layers; l++) {
        this.keys[l] = other.keys[l]
        this.values[l] = other.values[l]
      }
      this.mask = other.mask
      this.length = other.length
      this.batch = other.batch
      other.keys.fill(undefined)
      other.values.fill(undefined)
      other.mask = undefined
      other.length = 0
      other.batch = 0
      return
    }
    const len = Math.max(this.length, other.length)
    const padA = len - this.length
    const padB = len - other.length
    tf.tidy(() => {
      const pad3 = (t: tf.Tensor3D, n: number) =>
        n > 0
          ? tf.pad(t, [
              [0, 0],
              [n, 0],
              [0, 0],
            ])
          : t
      const pad2 = (t: tf.Tensor2D, n: number) =>
        n > 0
          ? tf.pad(t, [
              [0, 0],
              [n, 0],
            ])
          : t
      for (let l = 0; l < this.layers; l++) {
        const k = tf.concat([pad3(this.keys[l]!, padA), pad3(other.keys[l]!, padB)], 0) as tf.Tensor3D
        const v = tf.concat([pad3(this.values[l]!, padA), pad3(other.values[l]!, padB)], 0) as tf.Tensor3D
        this.replace(l, k, v)
      }
      this.replaceMask(tf.concat([pad2(this.mask!, padA), pad2(other.mask!, padB)], 0) as tf.Tensor2D)
    })
    this.length = len
    this.batch += other.batch
    other.dispose()
  }
}
