/**
 * OpenAI `logprobs` entries of generated tokens, from the logits each token was picked from.
 */

/** One alternative of `top_logprobs`. */
export interface TopLogprob {
  /** The token's text. */
  token: string
  /** Natural log of its probability. */
  logprob: number
  /** UTF-8 bytes of `token`. */
  bytes: number[]
}

/** One entry of `choices[i].logprobs.content`. */
export interface TokenLogprob extends TopLogprob {
  /** The most likely tokens at this position, most likely first (`top_logprobs` of them). */
  top_logprobs: TopLogprob[]
}

/**
 * Log-softmax of `logits / T` (`T` the request's temperature, 1 when greedy) at `token`, and the
 * `top` most likely ids with theirs, before any top-p cut. With top_p 1 the value at `token` is
 * the sampler's own behavior log-probability (`pick` in gpu/sampler.ts); greedy decoding reports
 * the model's distribution at temperature 1, as the sampler does.
 * @param logits `[vocabSize]` float32 row the token was picked from.
 * @param decode text of one token id.
 */
export function tokenLogprob(
  logits: Float32Array,
  token: number,
  temperature: number,
  top: number,
  decode: (id: number) => string,
): TokenLogprob {
  const t = temperature === 0 ? 1 : temperature
  let max = -Infinity
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]! / t)
  let z = 0
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! / t - max)
  const logZ = max + Math.log(z)
  const lp = (i: number) => logits[i]! / t - logZ
  const entry = (id: number): TopLogprob => {
    const text = decode(id)
    return { token: text, logprob: lp(id), bytes: Array.from(Buffer.from(text, 'utf8')) }
  }
  const best: number[] = []
  if (top > 0) {
    // Insertion into a short sorted list: top <= 20, so O(vocab * top) at worst.
    for (let i = 0; i < logits.length; i++) {
      if (best.length === top && logits[i]! <= logits[best[top - 1]!]!) continue
      let at = best.length
      while (at > 0 && logits[best[at - 1]!]! < logits[i]!) at--
      best.splice(at, 0, i)
      if (best.length > top) best.pop()
    }
  }
  return { ...entry(token), top_logprobs: best.map(entry) }
}
