import type { RenderedChat } from './chat-template.ts'
import { ConfigError, ShapeError } from './errors.ts'

/** A padded training batch. Inputs are `ids[:-1]`, targets `ids[1:]`, mask `lossMask[1:]`. */
export interface SftBatch {
  /** Sequences in the batch. */
  batch: number
  /** Padded input length (tokens per row). */
  seqLen: number
  /** Input ids `[batch, seqLen]` int32, row-major; right-padded with `padId`. */
  inputs: Int32Array
  /** Target ids `[batch, seqLen]` int32: the next token of every input position. */
  targets: Int32Array
  /** Loss mask `[batch, seqLen]` float32: 1 where the target is an assistant token. */
  mask: Float32Array
  /** Number of loss-masked target tokens (the sum of `mask`). */
  lossTokens: number
  /** Indices of the examples it holds. */
  examples: number[]
}

/** Settings of `makeBatches`. */
export interface BatchingConfig {
  /** Most padded input tokens per batch (`batch * seqLen`). */
  batchTokens: number
  /** Longest input (the model's `contextLength`); longer examples are cut to `contextLength + 1` ids. */
  contextLength: number
  /** Id used for padding (masked out). */
  padId: number
  /** Most sequences per batch; default unlimited. */
  maxBatchSize?: number
}

/**
 * Length bucketing: examples sorted by length and packed greedily into batches of at most
 * `batchTokens` padded input tokens, so padding stays small. Examples without a loss-masked target
 * are dropped. Deterministic (stable sort by length, then index).
 * @throws ConfigError when `batchTokens` cannot hold one sequence of `contextLength`.
 */
export function makeBatches(examples: readonly RenderedChat[], config: BatchingConfig): SftBatch[] {
  const { batchTokens, contextLength, padId } = config
  const maxBatch = config.maxBatchSize ?? Number.POSITIVE_INFINITY
  if (!(batchTokens >= contextLength))
    throw new ConfigError('batchTokens', batchTokens, `must be at least contextLength (${contextLength})`)
  const usable = examples
    .map((ex, index) => ({ index, len: Math.min(ex.ids.length, contextLength + 1) }))
    .filter(({ index, len }) => {
      const ex = examples[index]!
      if (ex.ids.length !== ex.lossMask.length)
        throw new ShapeError(`examples[${index}].lossMask`, 'ids length', [ex.lossMask.length])
      return len >= 2 && ex.lossMask.subarray(1, len).some((m) => m === 1)
    })
    .sort((a, b) => a.len - b.len || a.index - b.index)
  const groups: { index: number; len: number }[][] = []
  let current: { index: number; len: number }[] = []
  for (const item of usable) {
    const seqLen = item.len - 1
    if (current.length && ((current.length + 1) * seqLen > batchTokens || current.length >= maxBatch)) {
      groups.push(current)
      current = []
    }
    current.push(item)
  }
  if (current.length) groups.push(current)
  return groups.map((group) => {
    const seqLen = group[group.length - 1]!.len - 1
    const batch = group.length
    const inputs = new Int32Array(batch * seqLen).fill(padId)
    const targets = new Int32Array(batch * seqLen).fill(padId)
    const mask = new Float32Array(batch * seqLen)
    let lossTokens = 0
    group.forEach(({ index, len }, row) => {
      const ex = examples[index]!
      for (let t = 0; t < len - 1; t++) {
        inputs[row * seqLen + t] = ex.ids[t]!
        targets[row * seqLen + t] = ex.ids[t + 1]!
        mask[row * seqLen + t] = ex.lossMask[t + 1]!
        lossTokens += ex.lossMask[t + 1]!
      }
    })
    return { batch, seqLen, inputs, targets, mask, lossTokens, examples: group.map((g) => g.index) }
  })
}
