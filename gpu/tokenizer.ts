import { ConfigError, TemplateError } from './errors.ts'

/**
 * Byte-level tokenizer with special tokens. Ids 0..255 are the bytes of the UTF-8 text; special
 * tokens follow from id 256 in the order of `TokenizerSettings.specialTokens`. Every string encodes
 * (no unknown token) and every id sequence decodes (invalid UTF-8 becomes U+FFFD).
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
  /** Number of token ids: 256 bytes plus the special tokens. */
  readonly vocabSize: number
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

  /** @throws ConfigError when the settings lack a `SpecialToken`, repeat one, or have an unknown kind. */
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
    this.settings = { kind: 'byte', specialTokens: [...settings.specialTokens] }
    this.vocabSize = BYTE_VOCAB + settings.specialTokens.length
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
    return id >= BYTE_VOCAB && id < this.vocabSize
  }

  /**
   * Text to ids `[n]` int32. By default special-token strings in the text are plain bytes (so user
   * text cannot inject a turn boundary); with `allowSpecial` they become their special ids.
   */
  encode(text: string, options: { allowSpecial?: boolean } = {}): Int32Array {
    if (!options.allowSpecial) return Int32Array.from(utf8Encoder.encode(text))
    const out: number[] = []
    let plainStart = 0
    let i = 0
    const flush = (end: number) => {
      if (end > plainStart) for (const b of utf8Encoder.encode(text.slice(plainStart, end))) out.push(b)
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
   * Ids to text. Special ids become their strings (or nothing with `skipSpecial`); ids outside the
   * vocabulary become U+FFFD; byte runs that are not valid UTF-8 decode with U+FFFD.
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
      else {
        flush()
        if (id >= BYTE_VOCAB && id < this.vocabSize) {
          if (!options.skipSpecial) text += this.settings.specialTokens[id - BYTE_VOCAB]
        } else text += '\uFFFD'
      }
    }
    flush()
    return text
  }
}
