import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type TestHfModel, writeHfCheckpoint } from './hf-checkpoint.ts'
import { QWEN3_TOKENIZER_DIR } from './qwen3-tokenizer.ts'

/** Rows of the embedding of Qwen3's released models (the tokenizer has 151,669 ids). */
export const QWEN3_VOCAB_ROWS = 151_936

/**
 * Writes a tiny random Qwen3-layout model directory with the real Qwen3 tokenizer files
 * (`tokenizer.json`, `tokenizer_config.json` with its Jinja chat template): the released models'
 * 151,936-row embedding, a small width, GQA and per-head q/k norms, BF16, tied embeddings.
 * @param options.width hidden size (default 16); options.layers (default 1); options.seed.
 */
export async function writeTinyQwen3(
  dir: string,
  options: { width?: number; layers?: number; seed?: number; contextLength?: number } = {},
): Promise<TestHfModel> {
  const written = await writeHfCheckpoint(
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
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    await copyFile(join(QWEN3_TOKENIZER_DIR, f), join(dir, f))
  return written
}
