import { type ChatFormat, JinjaChatFormat, type Tokenizer, TriadChatFormat } from '../../gpu/index.ts'

/**
 * The raw bytes of single token ids, for OpenAI's `logprobs[].bytes`: what the tokenizer's
 * byte-level decoding gives for the token alone. A token may hold part of a UTF-8 character (a
 * byte-level merge, a lone byte id); its text alone is then not valid UTF-8, but its bytes joined
 * with its neighbours' are, so a client rebuilds the text from them.
 * - triad's tokenizer: a byte id (0..255) is that byte, a merge the bytes of its pair, a special
 *   token the UTF-8 of its string;
 * - a pretrained tokenizer: `PretrainedTokenizer.tokenBytes` (GPT-2's byte table for byte-level ones).
 * Ids outside the vocabulary get the UTF-8 of their decoded text.
 * @returns a function of an id, memoized.
 */
export function tokenBytesOf(format: ChatFormat): (id: number) => Uint8Array {
  const memo = new Map<number, Uint8Array>()
  const fallback = (id: number) => new TextEncoder().encode(format.decode([id]))
  let raw: (id: number) => Uint8Array
  if (format instanceof TriadChatFormat) raw = triadTokenBytes(format.tokenizer, fallback)
  else if (format instanceof JinjaChatFormat) {
    const t = format.tokenizer
    raw = (id) => t.tokenBytes(id) ?? fallback(id)
  } else raw = fallback
  return (id) => {
    let bytes = memo.get(id)
    if (bytes === undefined) {
      bytes = raw(id)
      memo.set(id, bytes)
    }
    return bytes
  }
}

/** The bytes of a triad tokenizer's ids, from its merge table. */
function triadTokenBytes(tokenizer: Tokenizer, fallback: (id: number) => Uint8Array) {
  const { specialTokens, merges = [] } = tokenizer.settings
  const encoder = new TextEncoder()
  const table: (Uint8Array | undefined)[] = []
  // Ids: the 256 bytes, then the special tokens, then the merges (gpu/tokenizer.ts).
  const firstSpecial = tokenizer.firstMergeId - specialTokens.length
  const bytesOf = (id: number): Uint8Array => {
    if (id >= 0 && id < firstSpecial) return Uint8Array.of(id)
    if (id >= firstSpecial && id < tokenizer.firstMergeId)
      return encoder.encode(specialTokens[id - firstSpecial])
    const k = id - tokenizer.firstMergeId
    const pair = merges[k]
    if (!Number.isInteger(id) || pair === undefined) return fallback(id)
    let out = table[k]
    if (out === undefined) {
      const a = bytesOf(pair[0])
      const b = bytesOf(pair[1])
      out = new Uint8Array(a.length + b.length)
      out.set(a)
      out.set(b, a.length)
      table[k] = out
    }
    return out
  }
  return bytesOf
}
