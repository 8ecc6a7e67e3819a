import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRng } from './prng.ts'
import {
  decodeSafetensors,
  encodeSafetensors,
  type NamedTensor,
  type SafetensorsDtype,
} from './safetensors.ts'

/**
 * A random Hugging Face model directory in the real layout: `config.json` with the fields
 * transformers writes, the HF tensor names and `[out, in]` shapes, safetensors in the chosen dtype
 * (sharded `model-0000N-of-0000M.safetensors` plus `model.safetensors.index.json` when
 * `shards > 1`), and `generation_config.json`. The tensor list is written here from the published
 * module structure of each architecture (transformers' modeling_llama / modeling_qwen2 /
 * modeling_qwen3), independently of `hf-tensors.ts`, so that the tests of the loader check it
 * against a second reading of that structure. Small random models made this way are what the
 * tests and `triad model tiny` (through `hf-tiny-qwen3.ts`) load; they do not learn anything.
 */

/** The architectures a random checkpoint can be written in. */
export type RandomHfArchitecture = 'LlamaForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM'

/** What `writeRandomHfCheckpoint` wrote. */
export interface RandomHfModel {
  dir: string
  /** The `config.json` written. */
  config: Record<string, unknown>
  /** Every tensor as stored (values after rounding to the dtype), by HF name. */
  tensors: Record<string, NamedTensor>
  /** The files written, by name inside `dir`, in the order written. */
  files: string[]
}

/** Sizes and settings of a random model (HF field names). */
export interface RandomHfSpec {
  architecture: RandomHfArchitecture
  hidden_size: number
  num_hidden_layers: number
  num_attention_heads: number
  num_key_value_heads: number
  head_dim: number
  intermediate_size: number
  vocab_size: number
  max_position_embeddings: number
  rope_theta: number
  rms_norm_eps: number
  tie_word_embeddings: boolean
  rope_scaling?: Record<string, unknown> | null
}

/**
 * Writes a random model directory (`dir` and its parents are made when missing; files of the same
 * names in it are replaced).
 * @param options.dtype stored dtype (default BF16); options.shards how many files (default 1);
 *   options.seed for the random values (normal, std 0.3 for weights and biases; norms 1 + N(0, 0.1)).
 */
export async function writeRandomHfCheckpoint(
  dir: string,
  spec: RandomHfSpec,
  options: { dtype?: SafetensorsDtype; shards?: number; seed?: number } = {},
): Promise<RandomHfModel> {
  const dtype = options.dtype ?? 'BF16'
  const shards = options.shards ?? 1
  const rng = createRng(options.seed ?? 1)
  const { hidden_size: d, intermediate_size: f, vocab_size: v, head_dim: hd } = spec
  const q = spec.num_attention_heads * hd
  const kv = spec.num_key_value_heads * hd
  const list: [string, number[], 'norm' | 'weight'][] = [['model.embed_tokens.weight', [v, d], 'weight']]
  for (let i = 0; i < spec.num_hidden_layers; i++) {
    const l = `model.layers.${i}`
    list.push(
      [`${l}.input_layernorm.weight`, [d], 'norm'],
      [`${l}.self_attn.q_proj.weight`, [q, d], 'weight'],
      [`${l}.self_attn.k_proj.weight`, [kv, d], 'weight'],
      [`${l}.self_attn.v_proj.weight`, [kv, d], 'weight'],
      [`${l}.self_attn.o_proj.weight`, [d, q], 'weight'],
      [`${l}.post_attention_layernorm.weight`, [d], 'norm'],
      [`${l}.mlp.gate_proj.weight`, [f, d], 'weight'],
      [`${l}.mlp.up_proj.weight`, [f, d], 'weight'],
      [`${l}.mlp.down_proj.weight`, [d, f], 'weight'],
    )
    if (spec.architecture === 'Qwen2ForCausalLM')
      list.push(
        [`${l}.self_attn.q_proj.bias`, [q], 'weight'],
        [`${l}.self_attn.k_proj.bias`, [kv], 'weight'],
        [`${l}.self_attn.v_proj.bias`, [kv], 'weight'],
      )
    if (spec.architecture === 'Qwen3ForCausalLM')
      list.push(
        [`${l}.self_attn.q_norm.weight`, [hd], 'norm'],
        [`${l}.self_attn.k_norm.weight`, [hd], 'norm'],
      )
  }
  list.push(['model.norm.weight', [d], 'norm'])
  if (!spec.tie_word_embeddings) list.push(['lm_head.weight', [v, d], 'weight'])

  const raw: Record<string, NamedTensor> = {}
  for (const [name, shape, kind] of list) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1))
    for (let k = 0; k < data.length; k++)
      data[k] = kind === 'norm' ? 1 + 0.1 * rng.normal() : 0.3 * rng.normal()
    raw[name] = { shape, data }
  }

  await mkdir(dir, { recursive: true })
  const names = list.map(([n]) => n)
  const stored: Record<string, NamedTensor> = {}
  const weightMap: Record<string, string> = {}
  const files: string[] = []
  const per = Math.ceil(names.length / shards)
  for (let s = 0; s < shards; s++) {
    const part = names.slice(s * per, (s + 1) * per)
    const file =
      shards === 1
        ? 'model.safetensors'
        : `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`
    const bytes = encodeSafetensors(
      Object.fromEntries(part.map((n) => [n, raw[n]!])),
      { format: 'pt' },
      { dtype },
    )
    await writeFile(path.join(dir, file), bytes)
    files.push(file)
    Object.assign(stored, decodeSafetensors(bytes).tensors)
    for (const n of part) weightMap[n] = file
  }
  if (shards > 1) {
    await writeFile(
      path.join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }, null, 2),
    )
    files.push('model.safetensors.index.json')
  }
  const modelType = { LlamaForCausalLM: 'llama', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3' }[
    spec.architecture
  ]
  const { architecture, ...fields } = spec
  const config: Record<string, unknown> = {
    architectures: [architecture],
    model_type: modelType,
    hidden_act: 'silu',
    attention_dropout: 0,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: { BF16: 'bfloat16', F16: 'float16', F32: 'float32' }[dtype],
    ...(architecture === 'Qwen2ForCausalLM' ? { use_sliding_window: false, sliding_window: 4096 } : {}),
    ...(architecture === 'LlamaForCausalLM' ? { attention_bias: false, mlp_bias: false } : {}),
    ...(architecture === 'Qwen3ForCausalLM' ? { attention_bias: false, use_sliding_window: false } : {}),
    ...fields,
  }
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config, null, 2))
  files.push('config.json')
  await writeFile(
    path.join(dir, 'generation_config.json'),
    JSON.stringify({
      bos_token_id: 1,
      eos_token_id: [2, 3],
      do_sample: true,
      temperature: 0.7,
      top_p: 0.8,
      top_k: 20,
    }),
  )
  files.push('generation_config.json')
  return { dir, config, tensors: stored, files }
}
