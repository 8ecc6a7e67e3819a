import { ConfigError } from './errors.ts'

/**
 * Byte-pair encoding (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword
 * Units", Algorithm 1; byte-level base as in GPT-2) on top of the byte ids 0..255.
 *
 * Text is first split into chunks (`splitChunks`) and merges never cross a chunk boundary; the
 * callers split on special tokens before that, so a merge never touches a special token. Merge `k`
 * (0-based, its rank) joins the adjacent pair `(a, b)` into the new id `firstId + k`; `a` and `b`
 * are bytes or earlier merges.
 *
 * Learning (`learnMerges`): count every adjacent pair of ids inside the chunks of the corpus
 * (overlapping pairs count, as in Sennrich's reference code), merge the most frequent pair
 * everywhere (left to right, non-overlapping), repeat. Ties go to the smallest pair `(a, b)`
 * (smallest `a`, then smallest `b`), so the result depends on the corpus only.
 *
 * Encoding (`BytePairEncoding.encodeText`): per chunk, repeatedly merge the present pair of lowest
 * rank (all its occurrences, left to right) until no pair of the chunk is a merge; chunks are
 * cached, so repeated words cost one map lookup.
 */

/** A merge: the ids of the adjacent pair it joins, `[left, right]`. */
export type MergePair = readonly [number, number]

/** Chunks longer than this many bytes are cut into pieces of at most this length (bounds encode time). */
export const MAX_CHUNK_BYTES = 64

/**
 * The chunk rule (GPT-2's, with single digits, `_` as a letter and every non-ASCII character as a
 * letter): an optional space then letters; an optional space then punctuation; one digit; a
 * whitespace run (leaving its last space to the word after it); any other whitespace run. Every
 * character matches one alternative, so the chunks concatenate to the text.
 */
const CHUNK = /[ ]?[A-Za-z_\u{80}-\u{10FFFF}]+|[ ]?[^\sA-Za-z0-9_\u{80}-\u{10FFFF}]+|[0-9]|\s+(?!\S)|\s+/gu

/** Splits plain text (no special tokens) into the chunks that merges stay inside. */
export function splitChunks(text: string): string[] {
  const out: string[] = []
  let at = 0
  for (const m of text.matchAll(CHUNK)) {
    if (m.index > at) out.push(text.slice(at, m.index)) // unreachable by the rule; kept for safety
    out.push(m[0])
    at = m.index + m[0].length
  }
  if (at < text.length) out.push(text.slice(at))
  return out
}

/**
 * Splits text at every occurrence of the given separators (special-token strings), dropping them:
 * the pieces between are plain text. Longest separator wins where several match.
 */
export function splitOnSeparators(text: string, separators: readonly string[]): string[] {
  const seps = [...separators].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)
  if (seps.length === 0) return [text]
  const out: string[] = []
  let start = 0
  let i = 0
  while (i < text.length) {
    const sep = seps.find((s) => text.startsWith(s, i))
    if (sep) {
      out.push(text.slice(start, i))
      i += sep.length
      start = i
    } else i++
  }
  out.push(text.slice(start))
  return out.filter((p) => p.length > 0)
}

const utf8Encoder = new TextEncoder()

/** The byte pieces of one chunk: its UTF-8 bytes, cut every `MAX_CHUNK_BYTES`. */
function chunkPieces(chunk: string): Uint8Array[] {
  const bytes = utf8Encoder.encode(chunk)
  if (bytes.length <= MAX_CHUNK_BYTES) return [bytes]
  const pieces: Uint8Array[] = []
  for (let at = 0; at < bytes.length; at += MAX_CHUNK_BYTES)
    pieces.push(bytes.subarray(at, at + MAX_CHUNK_BYTES))
  return pieces
}

/** Ids are below 2^21, so a pair packs exactly into one double: `a * 2^21 + b`. */
const PAIR_SHIFT = 2 ** 21
const pairKey = (a: number, b: number) => a * PAIR_SHIFT + b

/** Replaces every non-overlapping `(a, b)` in `ids`, left to right, by `id`; returns the new length. */
function mergeInPlace(ids: number[], a: number, b: number, id: number): number {
  let w = 0
  for (let r = 0; r < ids.length; r++) {
    if (r + 1 < ids.length && ids[r] === a && ids[r + 1] === b) {
      ids[w++] = id
      r++
    } else ids[w++] = ids[r]!
  }
  ids.length = w
  return w
}

/** Options of `learnMerges`. */
export interface LearnMergesOptions {
  /** How many merges to learn at most (fewer when no pair occurs `minCount` times any more). */
  merges: number
  /** Id of the first merge (the vocabulary size without merges, e.g. 264). */
  firstId: number
  /** Strings that separate text and are never part of a merge (the special tokens). */
  separators?: readonly string[]
  /** Smallest pair count worth a merge; default 2. */
  minCount?: number
}

/**
 * Learns byte-pair merges from a corpus (see the module comment for the exact procedure).
 * Deterministic: the same texts and options give the same merges.
 * @param texts the corpus; special-token strings in it (`separators`) are boundaries.
 * @returns merges in rank order; merge k creates id `firstId + k`.
 * @throws ConfigError for a negative or non-integer `merges`, or `firstId` below 256 or too large.
 */
export function learnMerges(texts: readonly string[], options: LearnMergesOptions): [number, number][] {
  const { merges: wanted, firstId, separators = [], minCount = 2 } = options
  if (!Number.isInteger(wanted) || wanted < 0)
    throw new ConfigError('merges', wanted, 'must be an integer >= 0')
  if (!Number.isInteger(firstId) || firstId < 256 || firstId + wanted >= PAIR_SHIFT)
    throw new ConfigError('firstId', firstId, `must be an integer in 256..${PAIR_SHIFT - 1 - wanted}`)
  // Unique chunks with their counts (a word list with frequencies, as in Sennrich's Algorithm 1).
  const chunkCounts = new Map<string, number>()
  for (const text of texts)
    for (const piece of splitOnSeparators(text, separators))
      for (const chunk of splitChunks(piece)) chunkCounts.set(chunk, (chunkCounts.get(chunk) ?? 0) + 1)
  const pieceCounts = new Map<string, { ids: number[]; count: number }>()
  for (const [chunk, count] of chunkCounts)
    for (const bytes of chunkPieces(chunk)) {
      if (bytes.length < 2) continue
      const key = String.fromCharCode(...bytes)
      const entry = pieceCounts.get(key)
      if (entry) entry.count += count
      else pieceCounts.set(key, { ids: Array.from(bytes), count })
    }
  let words = [...pieceCounts.values()]
  const merges: [number, number][] = []
  while (merges.length < wanted && words.length > 0) {
    const pairCounts = new Map<number, number>()
    for (const { ids, count } of words)
      for (let i = 0; i + 1 < ids.length; i++) {
        const key = pairKey(ids[i]!, ids[i + 1]!)
        pairCounts.set(key, (pairCounts.get(key) ?? 0) + count)
      }
    let bestKey = -1
    let bestCount = 0
    for (const [key, count] of pairCounts)
      if (count > bestCount || (count === bestCount && key < bestKey)) {
        bestKey = key
        bestCount = count
      }
    if (bestCount < minCount) break
    const a = Math.floor(bestKey / PAIR_SHIFT)
    const b = bestKey - a * PAIR_SHIFT
    const id = firstId + merges.length
    merges.push([a, b])
    words = words.filter((w) => mergeInPlace(w.ids, a, b, id) >= 2)
  }
  return merges
}

/**
 * Applies a list of merges: text to ids, ids back to bytes. Immutable apart from its chunk cache.
 * Ids `0..255` are bytes, `firstId + k` is merge `k`; ids in between (the special tokens) are never
 * produced and never merged.
 */
export class BytePairEncoding {
  /** Id of merge 0. */
  readonly firstId: number
  /** The merges in rank order. */
  readonly merges: readonly MergePair[]
  /** Rank of each pair, by `pairKey`. */
  private readonly ranks: ReadonlyMap<number, number>
  /** The bytes each merge id stands for (index k for id `firstId + k`). */
  private readonly mergeBytes: readonly Uint8Array[]
  private readonly cache = new Map<string, readonly number[]>()
  private static readonly CACHE_LIMIT = 1 << 16

  /**
   * @param merges pairs in rank order; each id a byte or an earlier merge.
   * @param firstId id of merge 0 (the vocabulary size without merges), at least 256.
   * @throws ConfigError when a merge is not a pair of integers, refers to a special token, to itself
   *   or a later merge, or repeats an earlier pair.
   */
  constructor(merges: readonly MergePair[], firstId: number) {
    if (!Number.isInteger(firstId) || firstId < 256 || firstId + merges.length >= PAIR_SHIFT)
      throw new ConfigError(
        'firstId',
        firstId,
        `must be an integer in 256..${PAIR_SHIFT - 1 - merges.length}`,
      )
    if (!Array.isArray(merges)) throw new ConfigError('merges', merges, 'must be an array of [id, id] pairs')
    this.firstId = firstId
    const ranks = new Map<number, number>()
    const mergeBytes: Uint8Array[] = []
    const bytesOf = (id: number) => (id < 256 ? Uint8Array.of(id) : mergeBytes[id - firstId]!)
    merges.forEach((pair, k) => {
      if (!Array.isArray(pair) || pair.length !== 2)
        throw new ConfigError(`merges[${k}]`, pair, 'must be a pair [id, id]')
      for (const id of pair)
        if (!Number.isInteger(id) || id < 0 || (id >= 256 && id < firstId) || id >= firstId + k)
          throw new ConfigError(
            `merges[${k}]`,
            pair,
            `id ${id} is not a byte (0..255) or an earlier merge (${firstId}..${firstId + k - 1})`,
          )
      const key = pairKey(pair[0], pair[1])
      if (ranks.has(key)) throw new ConfigError(`merges[${k}]`, pair, `repeats merges[${ranks.get(key)}]`)
      ranks.set(key, k)
      const left = bytesOf(pair[0])
      const right = bytesOf(pair[1])
      const joined = new Uint8Array(left.length + right.length)
      joined.set(left)
      joined.set(right, left.length)
      mergeBytes.push(joined)
    })
    this.merges = merges.map(([a, b]) => [a, b] as const)
    this.ranks = ranks
    this.mergeBytes = mergeBytes
  }

  /** Number of ids this adds (one per merge). */
  get size(): number {
    return this.merges.length
  }

  /** Whether `id` is a merge id. */
  isMerge(id: number): boolean {
    return id >= this.firstId && id < this.firstId + this.merges.length
  }

  /** The bytes a merge id stands for, or undefined for an id that is not a merge. */
  bytesOf(id: number): Uint8Array | undefined {
    return this.isMerge(id) ? this.mergeBytes[id - this.firstId] : undefined
  }

  /** Plain text (special-token strings are plain text here) to ids, appended to `out`. */
  encodeText(text: string, out: number[]): void {
    for (const chunk of splitChunks(text)) {
      let ids = this.cache.get(chunk)
      if (!ids) {
        const fresh: number[] = []
        for (const bytes of chunkPieces(chunk)) for (const id of this.mergeBytesToIds(bytes)) fresh.push(id)
        if (this.cache.size >= BytePairEncoding.CACHE_LIMIT) this.cache.clear()
        this.cache.set(chunk, fresh)
        ids = fresh
      }
      for (const id of ids) out.push(id)
    }
  }

  /** One chunk piece: merge the present pair of lowest rank until none is a merge. */
  private mergeBytesToIds(bytes: Uint8Array): number[] {
    const ids = Array.from(bytes)
    while (ids.length >= 2) {
      let bestRank = Number.POSITIVE_INFINITY
      for (let i = 0; i + 1 < ids.length; i++) {
        const rank = this.ranks.get(pairKey(ids[i]!, ids[i + 1]!))
        if (rank !== undefined && rank < bestRank) bestRank = rank
      }
      if (bestRank === Number.POSITIVE_INFINITY) break
      const [a, b] = this.merges[bestRank]!
      mergeInPlace(ids, a, b, this.firstId + bestRank)
    }
    return ids
  }
}
