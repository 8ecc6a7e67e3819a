import * as tf from '@tensorflow/tfjs'
import { ConfigError, NonFiniteError, ShapeError } from './errors.ts'
import { KvCache } from './kv-cache.ts'
import { leftPad } from './left-pad.ts'
import { createRng, type Rng } from './prng.ts'
import { forward, type Transformer } from './transformer.ts'

/**
 * Batched autoregressive sampling with a KV cache. Prompts of different lengths share one batch:
 * they are left-padded, padding is masked out of attention, and positions count from each prompt's
 * first real token, so every sequence sees exactly what it would see alone.
 */

/** Why a sequence stopped. Closed set. */
export const FinishReason = {
  /** It emitted one of `stopTokens` (included in its tokens). */
  Stop: 'stop',
  /** It reached `maxNewTokens` or the model's context length. */
  Length: 'length',
} as const
export type FinishReason = (typeof FinishReason)[keyof typeof FinishReason]

/** Sampling settings. */
export interface SampleOptions {
  /** Most tokens to generate per sequence. */
  maxNewTokens: number
  /** Softmax temperature; 0 means greedy (argmax). Default 1. */
  temperature?: number
  /** Nucleus sampling: keep the smallest set of tokens whose probability reaches `top_p`. Default 1. */
  top_p?: number
  /** Token ids that end a sequence (kept as its last token), for example `tokenizer.imEndId`. */
  stopTokens?: readonly number[]
  /** Seed of the sampling random source; default 0. Same seed, model and prompts: same tokens. */
  seed?: number
  /** Use the KV cache (default); false recomputes the whole prefix each step (a baseline). */
  useCache?: boolean
}

/** One sequence's output. */
export interface Generation {
  /** Generated token ids `[n]` int32, the stop token included when there is one. */
  tokens: Int32Array
  /**
   * `[n]` float32: log-probability of each token under the distribution it was sampled from
   * (softmax of logits / temperature, restricted to the top-p nucleus and renormalised). For greedy
   * decoding (temperature 0), under the model's own distribution at temperature 1.
   */
  logprobs: Float32Array
  finishReason: FinishReason
}

/**
 * Picks one token from a row of logits `[vocabSize]` float32 and returns `[token, logprob]`: greedy
 * at temperature 0 (logprob under the temperature-1 distribution), else a draw from
 * softmax(logits / T) restricted to the top-p nucleus (logprob under that renormalised
 * distribution). Uses `rng.next()` once when temperature > 0. Shared by `generate` and the
 * continuous batcher so both define behavior log-probabilities identically.
 */
export function pick(row: Float32Array, temperature: number, top_p: number, rng: Rng): [number, number] {
  const v = row.length
  if (temperature === 0) {
    let best = 0
    for (let i = 1; i < v; i++) if (row[i]! > row[best]!) best = i
    let z = 0
    for (let i = 0; i < v; i++) z += Math.exp(row[i]! - row[best]!)
    return [best, -Math.log(z)] // log softmax(z)[best] at temperature 1
  }
  let max = -Infinity
  for (let i = 0; i < v; i++) max = Math.max(max, row[i]! / temperature)
  const p = new Float64Array(v)
  let total = 0
  for (let i = 0; i < v; i++) {
    p[i] = Math.exp(row[i]! / temperature - max) // softmax(z / T), unnormalised
    total += p[i]!
  }
  if (top_p >= 1) {
    // the whole vocabulary in id order (no order array: this runs once per row and token)
    let u = rng.next() * total
    let chosen = v - 1
    for (let i = 0; i < v; i++) {
      u -= p[i]!
      if (u < 0) {
        chosen = i
        break
      }
    }
    return [chosen, Math.log(p[chosen]! / total)] // log (p_i / sum p)
  }
  // Nucleus (Holtzman et al. 2020, eq. 2): smallest prefix of the sorted tokens with sum >= top_p.
  const sorted = Array.from({ length: v }, (_, i) => i).sort((a, b) => p[b]! - p[a]!)
  const order: number[] = []
  let mass = 0
  for (const i of sorted) {
    order.push(i)
    mass += p[i]!
    if (mass >= top_p * total) break
  }
  let u = rng.next() * mass
  let chosen = order[order.length - 1]!
  for (const i of order) {
    u -= p[i]!
    if (u < 0) {
      chosen = i
      break
    }
  }
  return [chosen, Math.log(p[chosen]! / mass)] // log (p_i / sum_{nucleus} p)
}

/**
 * The error for a sampled token whose logprob is not finite: its row of logits held a NaN or a
 * +Infinity, or only -Infinity (any of these makes the logprob `pick` returns NaN), so the token is
 * garbage. A -Infinity among finite logits (a masked token) is fine.
 * @param step the generated token's index (0 for the first); who which sequence, in words.
 */
export function nonFiniteLogits(step: number, who: string, logprob: number): NonFiniteError {
  return new NonFiniteError(
    'logits',
    `generation step ${step} of ${who} (the sampled token's logprob)`,
    step,
    logprob,
    "the model's weights or activations overflowed or are NaN: check the checkpoint (triad refuses NaN weights at load) or the fine-tuning that made it",
  )
}

/**
 * Generates continuations of a batch of prompts.
 * @param prompts token ids of each prompt, `[promptLen_b]` each (lengths may differ), non-empty.
 * @returns one `Generation` per prompt, in order.
 * @throws ConfigError on bad settings; ShapeError on an empty prompt, an id outside the vocabulary
 *   or a prompt that leaves no room in the context; NonFiniteError when a step's logits hold a NaN
 *   or a +Infinity (seen in the sampled token's logprob, which any such logit makes NaN: no extra
 *   pass over the logits).
 */
export async function generate(
  model: Transformer,
  prompts: readonly ArrayLike<number>[],
  options: SampleOptions,
): Promise<Generation[]> {
  const { contextLength, vocabSize } = model.config
  const temperature = options.temperature ?? 1
  const top_p = options.top_p ?? 1
  if (!Number.isInteger(options.maxNewTokens) || options.maxNewTokens < 1)
    throw new ConfigError('maxNewTokens', options.maxNewTokens, 'must be a positive integer')
  if (!(temperature >= 0) || !Number.isFinite(temperature))
    throw new ConfigError('temperature', temperature, 'must be >= 0')
  if (!(top_p > 0 && top_p <= 1)) throw new ConfigError('top_p', top_p, 'must be in (0, 1]')
  if (prompts.length === 0) return []
  const stop = new Set(options.stopTokens ?? [])
  const b = prompts.length
  const width = Math.max(...prompts.map((p) => p.length))
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new ShapeError(`prompts[${i}]`, 'at least one token', [0])
    for (let k = 0; k < p.length; k++)
      if (!(Number.isInteger(p[k]) && p[k]! >= 0 && p[k]! < vocabSize))
        throw new ShapeError(`prompts[${i}]`, `ids in [0, ${vocabSize})`, [p.length])
  })
  if (width >= contextLength)
    throw new ShapeError('prompts', `lengths below contextLength ${contextLength}`, [b, width])
  const steps = Math.min(options.maxNewTokens, contextLength - width)

  // Left-padded prompt batch with the continuation's columns: ids, positions, real-token mask.
  const { total, ids, positions: pos, realMask: real } = leftPad(prompts, steps)
  const column = (data: Int32Array | Float32Array, from: number, to: number, dtype: 'int32' | 'float32') => {
    const out = dtype === 'int32' ? new Int32Array(b * (to - from)) : new Float32Array(b * (to - from))
    for (let i = 0; i < b; i++) out.set(data.subarray(i * total + from, i * total + to), i * (to - from))
    return tf.tensor2d(out, [b, to - from], dtype)
  }

  const rng = createRng(options.seed ?? 0)
  const out = prompts.map(() => ({ tokens: [] as number[], logprobs: [] as number[], done: false }))
  const useCache = options.useCache ?? true
  const cache = useCache ? new KvCache(model.config.layers, b) : undefined
  try {
    for (let s = 0; s < steps; s++) {
      const logits = tf.tidy(() => {
        if (cache) {
          const from = s === 0 ? 0 : width + s - 1
          const to = width + s
          return forward(model, column(ids, from, to, 'int32'), {
            positions: column(pos, from, to, 'int32'),
            attentionMask: s === 0 ? column(real, 0, width, 'float32') : undefined,
            cache,
            lastOnly: true,
          })
        }
        return forward(model, column(ids, 0, width + s, 'int32'), {
          positions: column(pos, 0, width + s, 'int32'),
          attentionMask: column(real, 0, width + s, 'float32'),
          lastOnly: true,
        })
      })
      const data = (await logits.data()) as Float32Array
      logits.dispose()
      let live = 0
      for (let i = 0; i < b; i++) {
        const seq = out[i]!
        // Draw for every row, finished or not, so one sequence's length never shifts another's stream.
        const [token, logprob] = pick(
          data.subarray(i * vocabSize, (i + 1) * vocabSize),
          temperature,
          top_p,
          rng,
        )
        if (seq.done) continue
        if (!Number.isFinite(logprob)) throw nonFiniteLogits(s, `sequence ${i}`, logprob)
        seq.tokens.push(token)
        seq.logprobs.push(logprob)
        ids[i * total + width + s] = token
        if (stop.has(token)) seq.done = true
        else live++
      }
      if (live === 0) break
    }
  } finally {
    cache?.dispose()
  }
  return out.map((seq) => ({
    tokens: Int32Array.from(seq.tokens),
    logprobs: Float32Array.from(seq.logprobs),
    finishReason: seq.done ? FinishReason.Stop : FinishReason.Length,
  }))
}
