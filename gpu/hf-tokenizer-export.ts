import { CheckpointError } from './errors.ts'
import { BYTE_VOCAB, type Tokenizer } from './tokenizer.ts'
import { SPECIAL_TEXT_ESCAPE, triadJinjaChatTemplate } from './triad-jinja-template.ts'

/**
 * triad's byte-level tokenizer in the form of Hugging Face's `tokenizer.json` (the `tokenizers`
 * library's serialisation) and a matching `tokenizer_config.json`: a byte-level BPE whose vocabulary
 * maps GPT-2's byte-to-character table (Radford et al. 2019, `bytes_to_unicode` in its encoder) of
 * ids 0..255 to the bytes, the merges in rank order, and the special tokens as added tokens.
 *
 * Pre-tokenization is triad's chunk rule (`bpe.ts`: optional space then letters, `_` and non-ASCII;
 * optional space then punctuation; one digit; whitespace runs), written as an isolated `Split` regex,
 * then `ByteLevel` without its own regex. One difference remains: triad cuts chunks longer than 64
 * bytes (`MAX_CHUNK_BYTES`) into pieces before merging, which `tokenizer.json` cannot express, so a
 * single chunk of more than 64 bytes (a long run of letters or of punctuation) may merge differently.
 *
 * The normalizer removes `U+FDD0`, which the exported chat template writes inside a special
 * token's string in message text so that it stays plain bytes, as triad encodes message text
 * (`triad-jinja-template.ts`). Added tokens are matched before normalization (`normalized: false`).
 */

/** GPT-2's reversible byte-to-character table: printable Latin-1 bytes map to themselves, the rest to 256+. */
export function byteToUnicode(): string[] {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  const out: string[] = new Array(256)
  let next = 256
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(keep(b) ? b : next++)
  return out
}

/** triad's chunk rule (`bpe.ts` CHUNK) in the Oniguruma syntax `tokenizers` reads. */
export const HF_CHUNK_REGEX =
  '[ ]?[A-Za-z_\\x{80}-\\x{10FFFF}]+|[ ]?[^\\sA-Za-z0-9_\\x{80}-\\x{10FFFF}]+|[0-9]|\\s+(?!\\S)|\\s+'

/**
 * The `tokenizer.json` object of a triad tokenizer.
 * @throws CheckpointError when two merges stand for the same bytes (a string vocabulary cannot hold both).
 */
export function hfTokenizerJson(tokenizer: Tokenizer): Record<string, unknown> {
  const table = byteToUnicode()
  const strings: string[] = table.slice()
  const vocab: Record<string, number> = {}
  for (let b = 0; b < BYTE_VOCAB; b++) vocab[table[b]!] = b
  const merges: string[] = []
  const settings = tokenizer.settings
  ;(settings.merges ?? []).forEach(([a, b], k) => {
    const id = tokenizer.firstMergeId + k
    const s = strings[a]! + strings[b]!
    if (s in vocab)
      throw new CheckpointError(
        'tokenizer.json',
        `merge ${k} (id ${id}) stands for the same bytes as id ${vocab[s]}; a Hugging Face vocabulary cannot hold both`,
      )
    strings[id] = s
    vocab[s] = id
    merges.push(`${strings[a]} ${strings[b]}`)
  })
  const addedTokens = settings.specialTokens.map((content, i) => ({
    id: BYTE_VOCAB + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }))
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: { type: 'Replace', pattern: { String: SPECIAL_TEXT_ESCAPE }, content: '' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: HF_CHUNK_REGEX }, behavior: 'Isolated', invert: false },
        byteLevel,
      ],
    },
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  }
}

/**
 * The `tokenizer_config.json` object of a triad tokenizer (fast tokenizer, ChatML turn end as EOS),
 * with triad's chat format as its Jinja `chat_template` (`triadJinjaChatTemplate`).
 */
export function hfTokenizerConfigJson(tokenizer: Tokenizer, contextLength: number): Record<string, unknown> {
  const decoder: Record<string, unknown> = {}
  tokenizer.settings.specialTokens.forEach((content, i) => {
    decoder[String(BYTE_VOCAB + i)] = {
      content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    }
  })
  const special = (id: number) => tokenizer.settings.specialTokens[id - BYTE_VOCAB]
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    added_tokens_decoder: decoder,
    bos_token: null,
    eos_token: special(tokenizer.imEndId),
    pad_token: special(tokenizer.padId),
    unk_token: null,
    model_max_length: contextLength,
    clean_up_tokenization_spaces: false,
    chat_template: triadJinjaChatTemplate(tokenizer),
  }
}
