import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type RandomHfModel, writeRandomHfCheckpoint } from './hf-random-checkpoint.ts'
import { QWEN3_TOKENIZER_DIR, QWEN3_TOKENIZER_FILES } from './qwen3-tokenizer-files.ts'

/**
 * The tiny Qwen3-layout checkpoint: a random model small enough to load and train on a CPU in
 * seconds, in the layout, vocabulary, tokenizer and chat template of Qwen3's released models. It is
 * what `recipes/tiny-hf.ts`, `triad model tiny` and the tests of the pretrained-model path run on;
 * it does not learn.
 */

/** Rows of the embedding of Qwen3's released models (the tokenizer has 151,669 ids). */
export const QWEN3_VOCAB_ROWS = 151_936

/** Settings of the tiny Qwen3 checkpoint. */
export interface TinyQwen3Options {
  /** Hidden size (default 16). */
  width?: number
  /** Transformer blocks (default 1). */
  layers?: number
  /** Seed of the random weights (default 0). */
  seed?: number
  /** `max_position_embeddings` (default 4096). */
  contextLength?: number
}

/**
 * Writes the tiny Qwen3-layout model directory into `dir` (made when missing): `config.json`
 * (`Qwen3ForCausalLM`: the released models' 151,936-row embedding, 2 heads of 8 with 1 key/value
 * head, per-head q/k norms, MLP 32, tied embeddings), `model.safetensors` (BF16, random),
 * `generation_config.json`, and the real Qwen3 `tokenizer.json` and `tokenizer_config.json` (with
 * its Jinja chat template).
 * @returns what was written; `files` lists every file, by name inside `dir`.
 */
export async function writeTinyQwen3(dir: string, options: TinyQwen3Options = {}): Promise<RandomHfModel> {
  const written = await writeRandomHfCheckpoint(
    dir,
    {
      architecture: 'Qwen3ForCausalLM',
      hidden_size: options.width ?? 16,
      num_hidden_layers: options.layers ?? 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 8,
      intermediate_size: 32,
      vocab_size: QWEN3_VOCAB_ROWS,
      max_position_embeddings: options.contextLength ?? 4096,
      rope_theta: 1000000,
      rms_norm_eps: 1e-6,
      tie_word_embeddings: true,
    },
    { seed: options.seed ?? 0 },
  )
  for (const f of QWEN3_TOKENIZER_FILES) {
    await copyFile(join(QWEN3_TOKENIZER_DIR, f), join(dir, f))
    written.files.push(f)
  }
  return written
}
