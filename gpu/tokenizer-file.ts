import { readFile, rename, writeFile } from 'node:fs/promises'
import { CheckpointError } from './errors.ts'
import { Tokenizer, type TokenizerSettings } from './tokenizer.ts'

/**
 * `tokenizer.json`: a tokenizer's settings (special tokens and byte-pair merges) as JSON. The same
 * file sits in every checkpoint directory; a run directory holds one too, so that the learner, the
 * rollout node and the policy engines all use the tokenizer the learner built.
 */

/** The JSON text of a tokenizer's settings (what `saveTokenizer` writes). */
export function tokenizerJson(tokenizer: Tokenizer): string {
  return `${JSON.stringify(tokenizer.settings, null, 2)}\n`
}

/**
 * Writes `tokenizer.json` (any file name) atomically: a temporary file renamed over it, so a reader
 * never sees half a file.
 */
export async function saveTokenizer(file: string, tokenizer: Tokenizer): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`
  await writeFile(tmp, tokenizerJson(tokenizer))
  await rename(tmp, file)
}

/**
 * Reads a tokenizer written by `saveTokenizer` (or a checkpoint's `tokenizer.json`).
 * @throws CheckpointError when the file cannot be read, is not JSON, or holds invalid settings
 *   (the cause is the tokenizer's ConfigError).
 */
export async function loadTokenizer(file: string): Promise<Tokenizer> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  let settings: unknown
  try {
    settings = JSON.parse(text)
  } catch (err) {
    throw new CheckpointError(file, 'not JSON', { cause: err })
  }
  if (
    typeof settings !== 'object' ||
    settings === null ||
    !Array.isArray((settings as TokenizerSettings).specialTokens)
  )
    throw new CheckpointError(file, 'not tokenizer settings (no specialTokens array)')
  try {
    return new Tokenizer(settings as TokenizerSettings)
  } catch (err) {
    throw new CheckpointError(file, (err as Error).message, { cause: err })
  }
}
