import * as tf from '@tensorflow/tfjs'

/**
 * Key-value cache of a transformer: per layer the rotated keys and the values of every token seen
 * so far, `[batch*kvHeads, length, headDim]` float32, and which of those tokens are real
 * (`keyMask`, `[batch, length]`, 1 real / 0 padding). `forward` reads and extends it, so a
 * generation step costs one token's work instead of the whole prefix.
 *
 * Tensors are replaced (tfjs tensors are immutable): each step concatenates the new keys and frees
 * the old tensors. Call `dispose()` when done.
 */
export class KvCache {
  /** Number of sequences. */
  readonly batch: number
  /** Tokens cached so far (the same for every sequence; padding counts). */
  length = 0
  private readonly keys: (tf.Tensor3D | undefined)[]
  private readonly values: (tf.Tensor3D | undefined)[]
  private mask: tf.Tensor2D | undefined

  constructor(layers: number, batch: number) {
    this.batch = batch
    this.keys = new Array(layers).fill(undefined)
    this.values = new Array(layers).fill(undefined)
  }

  /**
   * Appends layer `layer`'s new keys and values `[batch*kvHeads, steps, headDim]` and returns the
   * full ones `[batch*kvHeads, length + steps, headDim]`. The returned tensors are owned by the cache.
   */
  append(layer: number, k: tf.Tensor3D, v: tf.Tensor3D): [tf.Tensor3D, tf.Tensor3D] {
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

  /**
   * The key mask `[batch, length + steps]` after appending `steps` tokens whose mask is `next`
   * (`[batch, steps]`, default all real); undefined while every token is real. Kept by the cache.
   */
  extendKeyMask(next: tf.Tensor2D | undefined, steps: number): tf.Tensor2D | undefined {
    if (!next && !this.mask) return undefined
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
