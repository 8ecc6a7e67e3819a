/**
 * OpenAI `logprobs` entries of generated tokens, from the logits each token was picked from.
 */

/** One alternative of `top_logprobs`. */
export interface TopLogprob {
  /**
   * The token's text; for a token whose bytes are not valid UTF-8 on their own (part of a
   * character), `bytes:` and its bytes as `\xNN` escapes (`bytes:\xe4\xbd`), as OpenAI writes them.
   */
  token: string
  /** Natural log of its probability. */
  logprob: number
  /** The token's raw bytes (`tokenBytesOf`): the bytes of consecutive tokens join to the text's UTF-8. */
  bytes: number[]
}

/** One entry of `choices[i].logprobs.content`. */
export interface TokenLogprob extends TopLogprob {
  /**
   * The most likely tokens at this position, most likely first (`top_logprobs` of them), with
   * distinct `token` strings: of ids with the same text (two merges of the same bytes, an added
   * token spelled like plain text) only the most likely is listed.
   */
  top_logprobs: TopLogprob[]
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** The `token` string of raw token bytes: their text, or `bytes:\xNN..` when not valid UTF-8. */
export function tokenText(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    let out = 'bytes:'
    for (const b of bytes) out += `\\x${b.toString(16).padStart(2, '0')}`
    return out
  }
}

/**
 * Log-softmax of `logits / T` (`T` the request's temperature, 1 when greedy) at `token`, and the
 * `top` most likely distinct tokens with theirs, before any top-p cut. With top_p 1 the value at
 * `token` is the sampler's own behavior log-probability (`pick` in gpu/sampler.ts); greedy decoding
 * reports the model's distribution at temperature 1, as the sampler does.
 * @param logits `[vocabSize]` float32 row the token was picked from.
 * @param bytesOf raw bytes of one token id (`tokenBytesOf`).
 */
export function tokenLogprob(
  logits: Float32Array,
  token: number,
  temperature: number,
  top: number,
  bytesOf: (id: number) => Uint8Array,
): TokenLogprob {
  const t = temperature === 0 ? 1 : temperature
  let max = -Infinity
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]! / t)
  let z = 0
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! / t - max)
  const logZ = max + Math.log(z)
  const lp = (i: number) => logits[i]! / t - logZ
  const entry = (id: number): TopLogprob => {
    const bytes = bytesOf(id)
    return { token: tokenText(bytes), logprob: lp(id), bytes: Array.from(bytes) }
  }
  // The best `top` ids with distinct texts, most likely first: an id whose text is already listed
  // replaces that entry when more likely and is skipped otherwise, so the list never shrinks.
  const best: { id: number; text: string }[] = []
  if (top > 0) {
    for (let i = 0; i < logits.length; i++) {
      const v = logits[i]!
      if (best.length === top && v <= logits[best[top - 1]!.id]!) continue
      const text = tokenText(bytesOf(i))
      const same = best.findIndex((b) => b.text === text)
      if (same >= 0) {
        if (v <= logits[best[same]!.id]!) continue
        best.splice(same, 1)
      }
      let at = best.length
      while (at > 0 && logits[best[at - 1]!.id]! < v) at--
      best.splice(at, 0, { id: i, text })
      if (best.length > top) best.pop()
    }
  }
  return { ...entry(token), top_logprobs: best.map((b) => entry(b.id)) }
}
