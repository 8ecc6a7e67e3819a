import * as tf from '@tensorflow/tfjs'

/**
 * A batch of ragged prompts, left-padded to one width so that every prompt ends in the same column
 * (the column whose next token is sampled or judged). Padding ids are 0 and masked out of
 * attention; positions count from each prompt's first real token, so a prompt sees the same rotary
 * positions as it would alone.
 */
export interface LeftPadded {
  /** Rows. */
  batch: number
  /** Longest prompt, tokens. */
  width: number
  /** Columns: `width + extraColumns`. */
  total: number
  /** Token ids `[batch, total]` int32 (0 in padding and in the extra columns). */
  ids: Int32Array
  /** Positions `[batch, total]` int32: 0 at each prompt's first token, counting on into the extra columns. */
  positions: Int32Array
  /** Real-token mask `[batch, total]` float32: 1 on prompt tokens and extra columns, 0 on padding. */
  realMask: Float32Array
}

/**
 * Left-pads prompts (`[promptLen_i]` ids each) to the longest one, plus `extraColumns` columns after
 * it for tokens still to come (the sampler's continuation; real, positions continuing).
 */
export function leftPad(prompts: readonly ArrayLike<number>[], extraColumns = 0): LeftPadded {
  const batch = prompts.length
  const width = batch === 0 ? 0 : Math.max(...Array.from(prompts, (p) => p.length))
  const total = width + extraColumns
  const ids = new Int32Array(batch * total)
  const positions = new Int32Array(batch * total)
  const realMask = new Float32Array(batch * total)
  for (let i = 0; i < batch; i++) {
    const p = prompts[i]!
    const off = width - p.length
    for (let k = 0; k < p.length; k++) {
      ids[i * total + off + k] = p[k]!
      positions[i * total + off + k] = k
      realMask[i * total + off + k] = 1
    }
    for (let s = 0; s < extraColumns; s++) {
      positions[i * total + width + s] = p.length + s
      realMask[i * total + width + s] = 1
    }
  }
  return { batch, width, total, ids, positions, realMask }
}

/** The three arrays of a `LeftPadded` with no extra columns as tensors `[batch, width]` (ids and positions int32, mask float32). */
export function leftPaddedTensors(p: LeftPadded): {
  ids: tf.Tensor2D
  positions: tf.Tensor2D
  attentionMask: tf.Tensor2D
} {
  const shape: [number, number] = [p.batch, p.total]
  return {
    ids: tf.tensor2d(p.ids, shape, 'int32'),
    positions: tf.tensor2d(p.positions, shape, 'int32'),
    attentionMask: tf.tensor2d(p.realMask, shape),
  }
}

/**
 * Splits `n` rows of up to `width` tokens into consecutive chunks of at most `maxTokens` padded
 * tokens each (at least one row per chunk): `[start, end)` row ranges. Bounds the memory of one
 * forward/backward pass (attention alone holds `rows * heads * width^2` floats per layer).
 */
export function rowChunks(n: number, width: number, maxTokens: number): [number, number][] {
  const rows = Math.max(1, Math.floor(maxTokens / Math.max(1, width)))
  const out: [number, number][] = []
  for (let r0 = 0; r0 < n; r0 += rows) out.push([r0, Math.min(n, r0 + rows)])
  return out
}
