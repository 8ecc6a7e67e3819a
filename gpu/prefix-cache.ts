import * as tf from '@tensorflow/tfjs'

/**
 * Keys and values of a finished sequence, kept so that a later prompt that starts with the same
 * tokens (the next turn of the same agent loop: its history plus the tool result) prefills only
 * its new suffix. The idea of vLLM's automatic prefix caching (Kwon et al. 2023, PagedAttention,
 * section 4.4 "shared prefix"), here at the granularity of whole sequences.
 */
export interface PrefixEntry {
  /** The cached tokens `[length]` int32 (prompt plus generated tokens whose keys exist). */
  readonly tokens: Int32Array
  /** Per layer rotated keys `[heads, length, headDim]` float32 (owned by the cache). */
  readonly keys: readonly tf.Tensor3D[]
  /** Per layer values `[heads, length, headDim]` float32 (owned by the cache). */
  readonly values: readonly tf.Tensor3D[]
  lastUsed: number
}

/**
 * A least-recently-used set of `PrefixEntry` bounded by the total number of cached tokens. Entries
 * belong to one model (keys depend on the weights): make one cache per weight version.
 */
export class PrefixCache {
  private readonly entries: PrefixEntry[] = []
  private clock = 0
  /** Tokens held now. */
  tokens = 0
  /** Prompts prefilled from a prefix (counted by the user of `lookup`), and tokens they saved. */
  hits = 0
  savedTokens = 0

  /** @param capacity most tokens held (0 disables the cache). */
  constructor(readonly capacity: number) {}

  /**
   * The entry with the longest token list that is a strict prefix of `prompt` (at least one
   * prompt token must stay to prefill), or undefined.
   */
  lookup(prompt: Int32Array): PrefixEntry | undefined {
    let best: PrefixEntry | undefined
    for (const e of this.entries) {
      const n = e.tokens.length
      if (n >= prompt.length || (best && n <= best.tokens.length)) continue
      let same = true
      for (let k = 0; k < n; k++)
        if (e.tokens[k] !== prompt[k]) {
          same = false
          break
        }
      if (same) best = e
    }
    if (best) best.lastUsed = ++this.clock
    return best
  }

  /**
   * Adds an entry (taking ownership of its tensors, which are kept out of any `tf.tidy`), replacing
   * one with the same tokens, then evicts the least recently used entries beyond `capacity`.
   * Frees the tensors at once when the cache is disabled or the entry alone exceeds it.
   */
  insert(tokens: Int32Array, keys: tf.Tensor3D[], values: tf.Tensor3D[]): void {
    if (tokens.length === 0 || tokens.length > this.capacity) {
      tf.dispose([...keys, ...values])
      return
    }
    for (const t of [...keys, ...values]) tf.keep(t)
    const same = this.entries.findIndex(
      (e) => e.tokens.length === tokens.length && e.tokens.every((v, k) => v === tokens[k]),
    )
    if (same >= 0) this.remove(same)
    this.entries.push({ tokens, keys, values, lastUsed: ++this.clock })
    this.tokens += tokens.length
    while (this.tokens > this.capacity) {
      let oldest = 0
      for (let i = 1; i < this.entries.length; i++)
        if (this.entries[i]!.lastUsed < this.entries[oldest]!.lastUsed) oldest = i
      this.remove(oldest)
    }
  }

  /** Number of entries. */
  get size(): number {
    return this.entries.length
  }

  private remove(i: number): void {
    const [e] = this.entries.splice(i, 1)
    if (!e) return
    this.tokens -= e.tokens.length
    tf.dispose([...e.keys, ...e.values])
  }

  /** Frees every entry. */
  dispose(): void {
    while (this.entries.length > 0) this.remove(this.entries.length - 1)
  }
}
