import { BytePairEncoding, learnMerges, type MergePair, splitOnSeparators } from './bpe.ts'
import { ConfigError, TemplateError } from './errors.ts'

/**
 * Byte-level tokenizer with special tokens and optional byte-pair merges. Ids 0..255 are the bytes
 * of the UTF-8 text; special tokens follow from id 256 in the order of
 * `TokenizerSettings.specialTokens`; merge k (see `bpe.ts`) is id `256 + specialTokens.length + k`.
 * Every string encodes (no unknown token) and every id sequence decodes (invalid UTF-8 becomes
 * U+FFFD). Merges never join a special token, so special tokens stay single ids.
 */

/** The special tokens of the default chat vocabulary, in id order from 256. */
export const SpecialToken = {
  Pad: '<pad>',
  Eos: '<eos>',
  ImStart: '<|im_start|>',
  ImEnd: '<|im_end|>',
  ToolCallStart: '<tool_call>',
  ToolCallEnd: '</tool_call>',
  ThinkStart: '<think>',
  ThinkEnd: '</think>',
} as const
export type SpecialToken = (typeof SpecialToken)[keyof typeof SpecialToken]

/** The serialisable settings of a tokenizer; saved with every checkpoint (`tokenizer.json`). */
export interface TokenizerSettings {
  /** Tokenizer family; only `byte` for now. */
  kind: 'byte'
  /** Special tokens, ids 256, 257, ... in this order. Must include every `SpecialToken` value. */
  specialTokens: readonly string[]
  /**
   * Byte-pair merges in rank order (`learnMerges`): merge k joins the ids `[a, b]` (bytes or
   * earlier merges, never special tokens) into id `256 + specialTokens.length + k`. Default none.
   */
  merges?: readonly MergePair[]
}

/** The default settings: bytes plus every `SpecialToken` (vocabulary size 264). */
export const DEFAULT_TOKENIZER_SETTINGS: TokenizerSettings = {
  kind: 'byte',
  specialTokens: Object.values(SpecialToken),
}

/** Number of byte tokens (ids 0..255). */
export const BYTE_VOCAB = 256

const utf8Decoder = new TextDecoder('utf-8', { fatal: false })
const utf8Encoder = new TextEncoder()

/** Byte-level tokenizer; construct with `new Tokenizer(settings?)`. Immutable. */
export class Tokenizer {
  /** Settings it was built from. */
  readonly settings: TokenizerSettings
  /** Number of token ids: 256 bytes, the special tokens, the merges. */
  readonly vocabSize: number
  /** Id of the first merge (256 plus the number of special tokens). */
  readonly firstMergeId: number
  /** Id of `<pad>`. */
  readonly padId: number
  /** Id of `<eos>`. */
  readonly eosId: number
  /** Id of `<|im_start|>`. */
  readonly imStartId: number
  /** Id of `<|im_end|>` (the end of every turn; the stop token of generation). */
  readonly imEndId: number
  /** Id of `<tool_call>`. */
  readonly toolCallStartId: number
  /** Id of `</tool_call>`. */
  readonly toolCallEndId: number
  private readonly specialIds: ReadonlyMap<string, number>
  private readonly specialsByLength: readonly string[]
  private readonly bpe: BytePairEncoding | undefined

  /**
   * @throws ConfigError when the settings lack a `SpecialToken`, repeat one, have an unknown kind,
   *   or have a malformed merge (see `BytePairEncoding`).
   */
  constructor(settings: TokenizerSettings = DEFAULT_TOKENIZER_SETTINGS) {
    if (settings.kind !== 'byte') throw new ConfigError('kind', settings.kind, "only 'byte' tokenizers exist")
    const ids = new Map<string, number>()
    settings.specialTokens.forEach((tok, i) => {
      if (tok.length === 0) throw new ConfigError('specialTokens', tok, 'empty special token')
      if (ids.has(tok)) throw new ConfigError('specialTokens', tok, 'repeated special token')
      ids.set(tok, BYTE_VOCAB + i)
    })
    for (const tok of Object.values(SpecialToken))
      if (!ids.has(tok)) throw new ConfigError('specialTokens', settings.specialTokens, `missing ${tok}`)
    this.firstMergeId = BYTE_VOCAB + settings.specialTokens.length
    const merges = settings.merges ?? []
    if (!Array.isArray(merges)) throw new ConfigError('merges', merges, 'must be an array of [id, id] pairs')
    this.bpe = merges.length > 0 ? new BytePairEncoding(merges, this.firstMergeId) : undefined
    this.settings = {
      kind: 'byte',
      specialTokens: [...settings.specialTokens],
      ...(this.bpe ? { merges: this.bpe.merges } : {}),
    }
    this.vocabSize = this.firstMergeId + merges.length
    this.specialIds = ids
    this.specialsByLength = [...ids.keys()].sort((a, b) => b.length - a.length)
    this.padId = ids.get(SpecialToken.Pad)!
    this.eosId = ids.get(SpecialToken.Eos)!
    this.imStartId = ids.get(SpecialToken.ImStart)!
    this.imEndId = ids.get(SpecialToken.ImEnd)!
    this.toolCallStartId = ids.get(SpecialToken.ToolCallStart)!
    this.toolCallEndId = ids.get(SpecialToken.ToolCallEnd)!
  }

  /**
   * Id of a special token.
   * @throws TemplateError when `token` is not a special token of this vocabulary.
   */
  special(token: string): number {
    const id = this.specialIds.get(token)
    if (id === undefined) throw new TemplateError(`'${token}' is not a special token`)
    return id
  }

  /** Whether `id` is a special token id. */
  isSpecial(id: number): boolean {
    return id >= BYTE_VOCAB && id < this.firstMergeId
  }

  /** Number of byte-pair merges (0 for the plain byte-level vocabulary). */
  get mergeCount(): number {
    return this.vocabSize - this.firstMergeId
  }

  /** Plain text to ids, appended to `out`: its UTF-8 bytes, merged when there are merges. */
  private encodePlain(text: string, out: number[]): void {
    if (this.bpe) this.bpe.encodeText(text, out)
    else for (const b of utf8Encoder.encode(text)) out.push(b)
  }

  /**
   * Text to ids `[n]` int32. By default special-token strings in the text are plain bytes (so user
   * text cannot inject a turn boundary); with `allowSpecial` they become their special ids.
   */
  encode(text: string, options: { allowSpecial?: boolean } = {}): Int32Array {
    if (!options.allowSpecial) {
      if (!this.bpe) return Int32Array.from(utf8Encoder.encode(text))
      const out: number[] = []
      this.bpe.encodeText(text, out)
      return Int32Array.from(out)
    }
    const out: number[] = []
    let plainStart = 0
    let i = 0
    const flush = (end: number) => {
      if (end > plainStart) this.encodePlain(text.slice(plainStart, end), out)
    }
    while (i < text.length) {
      let matched: string | undefined
      if (text.charCodeAt(i) === 60 /* '<' */)
        matched = this.specialsByLength.find((tok) => text.startsWith(tok, i))
      if (matched) {
        flush(i)
        out.push(this.specialIds.get(matched)!)
        i += matched.length
        plainStart = i
      } else i++
    }
    flush(text.length)
    return Int32Array.from(out)
  }

  /**
   * Ids to text. Merge ids become their bytes; special ids become their strings (or nothing with
   * `skipSpecial`); ids outside the vocabulary become U+FFFD; byte runs that are not valid UTF-8
   * decode with U+FFFD (a merge may hold part of a character; the run is decoded as a whole).
   */
  decode(ids: ArrayLike<number>, options: { skipSpecial?: boolean } = {}): string {
    let text = ''
    const bytes: number[] = []
    const flush = () => {
      if (bytes.length) {
        text += utf8Decoder.decode(Uint8Array.from(bytes))
        bytes.length = 0
      }
    }
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!
      if (id >= 0 && id < BYTE_VOCAB) bytes.push(id)
      else if (id >= this.firstMergeId && id < this.vocabSize)
        for (const b of this.bpe!.bytesOf(id)!) bytes.push(b)
      else {
        flush()
        if (id >= BYTE_VOCAB && id < this.firstMergeId) {
          if (!options.skipSpecial) text += this.settings.specialTokens[id - BYTE_VOCAB]
        } else text += '\uFFFD'
      }
    }
    flush()
    return text
  }
}

/**
 * A tokenizer for the task corpus: the default chat vocabulary plus `merges` byte-pair merges
 * learned from `corpus` (`learnMerges`). Each corpus entry is either
 * - byte-level token ids (e.g. `renderChat(new Tokenizer(), messages, {tools}).ids`; preferred):
 *   the plain text is exactly the runs between special ids, so text that the chat template encodes
 *   as plain bytes (a `<tool_call>` string inside the system prompt) is learned as such; or
 * - a string: special-token strings in it are boundaries.
 * Deterministic: every process that learns from the same corpus gets the same tokenizer; still,
 * learn once and share it with `saveTokenizer` / `loadTokenizer`.
 * @param merges how many merges at most (fewer when no pair occurs twice any more).
 * @returns a tokenizer with vocabulary `264 + merges learned`.
 * @throws ConfigError for a negative or non-integer `merges`.
 */
export function learnTaskTokenizer(
  corpus: readonly (string | ArrayLike<number>)[],
  merges: number,
): Tokenizer {
  const base = DEFAULT_TOKENIZER_SETTINGS
  const texts: string[] = []
  for (const entry of corpus) {
    if (typeof entry === 'string') texts.push(...splitOnSeparators(entry, base.specialTokens))
    else texts.push(...plainRuns(entry))
  }
  const learned = learnMerges(texts, {
    merges,
    firstId: BYTE_VOCAB + base.specialTokens.length,
  })
  return new Tokenizer({ ...base, merges: learned })
}

/** The plain texts of byte-level ids: the decoded runs of byte ids between any other ids. */
function plainRuns(ids: ArrayLike<number>): string[] {
  const runs: string[] = []
  let run: number[] = []
  const flush = () => {
    if (run.length) runs.push(utf8Decoder.decode(Uint8Array.from(run)))
    run = []
  }
  for (let k = 0; k < ids.length; k++) {
    const id = ids[k]!
    if (id >= 0 && id < BYTE_VOCAB) run.push(id)
    else flush()
  }
  flush()
  return runs
}
