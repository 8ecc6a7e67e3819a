import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers'
import { CheckpointError } from './errors.ts'
import { byteToUnicode } from './hf-tokenizer-export.ts'

/**
 * A pretrained model's own tokenizer: its `tokenizer.json` (vocabulary, merges, pre-tokenizer,
 * added tokens) read by the maintained `@huggingface/tokenizers` library, with the metadata of its
 * `tokenizer_config.json` (special tokens, Jinja `chat_template`). triad's byte-pair code
 * (`bpe.ts`) is not involved.
 *
 * Added (special) tokens written in a text, such as `<|im_start|>` or `<tool_call>`, always encode
 * to their single ids, as in Hugging Face `transformers`: the chat template relies on it, and it
 * means a tool result that contains such a string does become that token.
 */

/** The parts of `tokenizer_config.json` triad reads. */
export interface PretrainedTokenizerConfig {
  /** Jinja chat template; absent in tokenizers of base models without one. */
  chat_template?: string | { name: string; template: string }[]
  /** The end-of-sequence token; for chat models the end of an assistant turn (`<|im_end|>`). */
  eos_token?: string | { content: string } | null
  bos_token?: string | { content: string } | null
  pad_token?: string | { content: string } | null
  [key: string]: unknown
}

/** A tokenizer read from a Hugging Face model directory; construct with `loadPretrainedTokenizer`. */
export class PretrainedTokenizer {
  /** Number of token ids the tokenizer knows (vocabulary plus added tokens); the model's embedding may be larger. */
  readonly vocabSize: number
  /** Id of `eos_token` (the end of a turn for chat models), when the config names one. */
  readonly eosId: number | undefined
  /** Id of `pad_token`, when the config names one. */
  readonly padId: number | undefined

  /**
   * @param dir the directory the files came from (named in errors).
   * @throws CheckpointError when the config names a special token the vocabulary lacks.
   */
  constructor(
    private readonly hf: HfTokenizer,
    /** The `tokenizer_config.json` contents. */
    readonly config: PretrainedTokenizerConfig,
    /** The directory the files were read from. */
    readonly dir: string,
  ) {
    const vocab = hf.get_vocab(true)
    let size = 0
    for (const id of vocab.values()) if (id + 1 > size) size = id + 1
    this.vocabSize = size
    this.eosId = this.specialFromConfig('eos_token')
    this.padId = this.specialFromConfig('pad_token')
  }

  private specialFromConfig(field: 'eos_token' | 'pad_token'): number | undefined {
    const token = tokenContent(this.config[field])
    if (token === undefined) return undefined
    const id = this.hf.token_to_id(token)
    if (id === undefined)
      throw new CheckpointError(
        join(this.dir, 'tokenizer_config.json'),
        `${field} ${JSON.stringify(token)} is not in tokenizer.json`,
      )
    return id
  }

  /** Text to ids `[n]` int32, with no BOS/EOS added (the chat template writes those). */
  encode(text: string): Int32Array {
    return Int32Array.from(this.hf.encode(text, { add_special_tokens: false }).ids)
  }

  /** Ids to text; special tokens are kept as their strings unless `skipSpecial`. */
  decode(ids: ArrayLike<number>, options: { skipSpecial?: boolean } = {}): string {
    return this.hf.decode(Array.from(ids), {
      skip_special_tokens: options.skipSpecial ?? false,
      clean_up_tokenization_spaces: false,
    })
  }

  /** The id of one token string (a special token such as `<|im_end|>`), or undefined when unknown. */
  tokenId(token: string): number | undefined {
    return this.hf.token_to_id(token)
  }

  /**
   * The raw bytes of one id, as the tokenizer's decoder gives them for that token alone (a token may
   * hold part of a UTF-8 character, which `decode` writes as U+FFFD): a `ByteLevel` tokenizer's
   * characters mapped back through GPT-2's byte table; otherwise `<0xNN>` byte-fallback pieces as
   * their byte and `▁` (Metaspace) as a space; an added token as the UTF-8 of its text.
   * @returns undefined for an id outside the vocabulary.
   */
  tokenBytes(id: number): Uint8Array | undefined {
    const token = this.hf.id_to_token(id)
    if (token === undefined) return undefined
    if (this.addedIds === undefined) this.addedIds = new Set(this.hf.get_added_tokens_decoder().keys())
    if (this.addedIds.has(id)) return new TextEncoder().encode(token)
    if (this.byteLevel()) {
      const table = byteLevelTable()
      const bytes = [...token].map((c) => table.get(c))
      if (bytes.every((b) => b !== undefined)) return Uint8Array.from(bytes as number[])
      return new TextEncoder().encode(token)
    }
    const hex = /^<0x([0-9A-Fa-f]{2})>$/.exec(token)
    if (hex) return Uint8Array.of(Number.parseInt(hex[1]!, 16))
    return new TextEncoder().encode(token.replaceAll('\u2581', ' '))
  }

  private addedIds: Set<number> | undefined

  /** Whether the decoder is byte-level (GPT-2, Qwen, Llama 3), alone or in a sequence. */
  private byteLevel(): boolean {
    const types: string[] = []
    const walk = (d: unknown) => {
      const config = (d as { config?: { type?: unknown; decoders?: unknown[] } } | null)?.config
      if (typeof config?.type === 'string') types.push(config.type)
      for (const sub of (d as { decoders?: unknown[] } | null)?.decoders ?? []) walk(sub)
    }
    walk(this.hf.decoder)
    return types.includes('ByteLevel')
  }
}

/**
 * The string of a special-token field of `tokenizer_config.json` (`bos_token`, `eos_token`...:
 * a string or an added-token object `{content}`); undefined for anything else.
 */
export function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { content?: unknown }).content === 'string'
  )
    return (value as { content: string }).content
  return undefined
}

function readJson(file: string): unknown {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new CheckpointError(file, `cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: err,
    })
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new CheckpointError(file, 'not JSON', { cause: err })
  }
}

/**
 * Reads `DIR/tokenizer.json` and `DIR/tokenizer_config.json` of a Hugging Face model directory.
 * Loading Qwen3's 151,669-token vocabulary takes about 1.2 s here.
 * @throws CheckpointError (one line naming the file) when a file is missing, is not JSON, is not a
 *   tokenizer the library can build, or names a special token the vocabulary lacks.
 */
export function loadPretrainedTokenizer(dir: string): PretrainedTokenizer {
  const tokenizerFile = join(dir, 'tokenizer.json')
  const configFile = join(dir, 'tokenizer_config.json')
  const json = readJson(tokenizerFile)
  const config = readJson(configFile)
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new CheckpointError(configFile, 'not a JSON object')
  if (typeof json !== 'object' || json === null || typeof (json as { model?: unknown }).model !== 'object')
    throw new CheckpointError(tokenizerFile, 'not a tokenizers file (no "model" object)')
  let hf: HfTokenizer
  try {
    hf = new HfTokenizer(json, config)
  } catch (err) {
    throw new CheckpointError(tokenizerFile, `cannot build the tokenizer: ${(err as Error).message}`, {
      cause: err,
    })
  }
  return new PretrainedTokenizer(hf, config as PretrainedTokenizerConfig, dir)
}

let byteLevelInverse: Map<string, number> | undefined

/** GPT-2's byte table inverted: character to byte. */
function byteLevelTable(): Map<string, number> {
  byteLevelInverse ??= new Map(byteToUnicode().map((c, b) => [c, b]))
  return byteLevelInverse
}
