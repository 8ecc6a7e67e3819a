import { CheckpointError, ConfigError, UnsupportedArchitectureError } from './errors.ts'
import {
  type FullTransformerConfig,
  fullConfig,
  type RopeScaling,
  RopeScalingType,
} from './transformer-config.ts'

/**
 * A Hugging Face `config.json` for the Llama family of decoders, both ways: read into a
 * `FullTransformerConfig` (`fromHfConfig`) and written from one (`toHfConfig`). The fields are those
 * of transformers' `LlamaConfig`, `Qwen2Config` and `Qwen3Config`; `rope_parameters` (transformers 5)
 * is read as well as `rope_theta` / `rope_scaling`.
 */

/** The architectures (`config.json` `architectures[0]`) triad loads and writes. */
export const HfArchitecture = {
  Llama: 'LlamaForCausalLM',
  Qwen2: 'Qwen2ForCausalLM',
  Qwen3: 'Qwen3ForCausalLM',
} as const
export type HfArchitecture = (typeof HfArchitecture)[keyof typeof HfArchitecture]

/** `model_type` of each architecture. */
const MODEL_TYPE: Readonly<Record<HfArchitecture, string>> = {
  [HfArchitecture.Llama]: 'llama',
  [HfArchitecture.Qwen2]: 'qwen2',
  [HfArchitecture.Qwen3]: 'qwen3',
}

/** The `rope_type` values read (`default` is no scaling); others (`dynamic`, `yarn`, `longrope`, ...) are refused. */
export const HF_ROPE_TYPES = ['default', 'linear', 'llama3'] as const

/** What `fromHfConfig` reads. */
export interface HfModelConfig {
  architecture: HfArchitecture
  config: FullTransformerConfig
  /** `bos_token_id`, `eos_token_id` (a list), `pad_token_id` when given. */
  bosTokenId?: number
  eosTokenIds: number[]
  padTokenId?: number
  /** `torch_dtype` (or `dtype`) as given, e.g. `bfloat16`. */
  torchDtype?: string
}

type Json = Record<string, unknown>

function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v]
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number')
  return []
}

/**
 * Reads a parsed `config.json`.
 * @param file the path, for error messages.
 * @param options.contextLength cap on the context (default `max_position_embeddings`): the rotary
 *   tables hold this many positions.
 * @throws UnsupportedArchitectureError for an architecture outside `HfArchitecture`;
 *   CheckpointError for a missing or bad field, quantized weights (`quantization_config`), or a
 *   setting triad does not implement (sliding window, attention or MLP biases on Llama/Qwen3, an
 *   activation other than SiLU, a rope type outside `HF_ROPE_TYPES`).
 */
export function fromHfConfig(
  raw: unknown,
  file: string,
  options: { contextLength?: number } = {},
): HfModelConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new CheckpointError(file, 'is not a JSON object')
  const c = raw as Json
  const supported = Object.values(HfArchitecture)
  const arch = Array.isArray(c.architectures) ? c.architectures[0] : undefined
  if (!supported.includes(arch as HfArchitecture))
    throw new UnsupportedArchitectureError(file, arch === undefined ? undefined : String(arch), supported)
  const architecture = arch as HfArchitecture
  const int = (field: string, fallback?: number): number => {
    const v = c[field] ?? fallback
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new CheckpointError(file, `${field} must be a positive integer, got ${JSON.stringify(c[field])}`)
    return v
  }
  const refuse = (field: string, why: string) => {
    throw new CheckpointError(file, `${field}=${JSON.stringify(c[field])} is not supported (${why})`)
  }
  if (c.quantization_config !== undefined && c.quantization_config !== null) {
    const q = c.quantization_config as Json
    const method = typeof q === 'object' && typeof q.quant_method === 'string' ? ` (${q.quant_method})` : ''
    throw new CheckpointError(
      file,
      `quantization_config${method} is not supported: triad reads F32, F16 and BF16 weights; use the unquantized model`,
    )
  }
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu')
    refuse('hidden_act', 'the MLP is SwiGLU with silu')
  if (c.use_sliding_window === true) refuse('use_sliding_window', 'attention is full causal')
  if (architecture !== HfArchitecture.Qwen2 && c.attention_bias === true)
    refuse('attention_bias', 'only Qwen2 has q/k/v biases')
  if (c.mlp_bias === true) refuse('mlp_bias', 'the MLP has no biases')
  const heads = int('num_attention_heads')
  const width = int('hidden_size')
  const rope = (
    typeof c.rope_parameters === 'object' && c.rope_parameters !== null ? c.rope_parameters : c.rope_scaling
  ) as Json | null | undefined
  const ropeTheta = (c.rope_theta ?? rope?.rope_theta ?? 10000) as number
  if (typeof ropeTheta !== 'number')
    throw new CheckpointError(file, `rope_theta must be a number, got ${ropeTheta}`)
  const maxPositions = int('max_position_embeddings')
  const contextLength = Math.min(maxPositions, options.contextLength ?? maxPositions)
  const normEps = c.rms_norm_eps ?? 1e-6
  let config: FullTransformerConfig
  try {
    config = fullConfig({
      layers: int('num_hidden_layers'),
      width,
      heads,
      kvHeads: int('num_key_value_heads', heads),
      headDim: int('head_dim', Math.floor(width / heads)),
      mlpHidden: int('intermediate_size'),
      vocabSize: int('vocab_size'),
      contextLength,
      ropeTheta,
      normEps: normEps as number,
      qkvBias: architecture === HfArchitecture.Qwen2,
      qkNorm: architecture === HfArchitecture.Qwen3,
      tiedEmbeddings: c.tie_word_embeddings === true,
      ropeScaling: ropeScalingOf(rope, file),
    })
  } catch (err) {
    if (err instanceof ConfigError) throw new CheckpointError(file, err.message, { cause: err })
    throw err
  }
  const dtype = c.torch_dtype ?? c.dtype
  return {
    architecture,
    config,
    ...(typeof c.bos_token_id === 'number' ? { bosTokenId: c.bos_token_id } : {}),
    eosTokenIds: ids(c.eos_token_id),
    ...(typeof c.pad_token_id === 'number' ? { padTokenId: c.pad_token_id } : {}),
    ...(typeof dtype === 'string' ? { torchDtype: dtype } : {}),
  }
}

function ropeScalingOf(rope: Json | null | undefined, file: string): RopeScaling {
  if (!rope) return { type: RopeScalingType.None }
  const type = rope.rope_type ?? rope.type ?? 'default'
  const num = (field: string): number => {
    const v = rope[field]
    if (typeof v !== 'number')
      throw new CheckpointError(file, `rope_scaling.${field} must be a number, got ${JSON.stringify(v)}`)
    return v
  }
  switch (type) {
    case 'default':
      return { type: RopeScalingType.None }
    case 'linear':
      return { type: RopeScalingType.Linear, factor: num('factor') }
    case 'llama3':
      return {
        type: RopeScalingType.Llama3,
        factor: num('factor'),
        lowFreqFactor: num('low_freq_factor'),
        highFreqFactor: num('high_freq_factor'),
        originalContextLength: num('original_max_position_embeddings'),
      }
    default:
      throw new CheckpointError(
        file,
        `rope_scaling type ${JSON.stringify(type)} is not supported; supported: ${HF_ROPE_TYPES.join(', ')}`,
      )
  }
}

/**
 * The architecture a config is written as: `Qwen3ForCausalLM` with q/k norms, `Qwen2ForCausalLM`
 * with q/k/v biases, else `LlamaForCausalLM` (triad's own models: Llama with tied embeddings).
 */
export function hfArchitectureOf(config: FullTransformerConfig): HfArchitecture {
  if (config.qkNorm && config.qkvBias)
    throw new ConfigError('qkvBias', true, 'q/k norms with q/k/v biases match no Hugging Face architecture')
  if (config.qkNorm) return HfArchitecture.Qwen3
  if (config.qkvBias) return HfArchitecture.Qwen2
  return HfArchitecture.Llama
}

/**
 * The `config.json` object for a model (float32 weights as written by `exportHf`).
 * @param tokens the special ids to record (`bos_token_id`, `eos_token_id`, `pad_token_id`).
 */
export function toHfConfig(
  config: FullTransformerConfig,
  tokens: { bosTokenId?: number; eosTokenIds: readonly number[]; padTokenId?: number },
  options: { torchDtype?: string } = {},
): Json {
  const architecture = hfArchitectureOf(config)
  const s = config.ropeScaling
  const ropeScaling =
    s.type === RopeScalingType.None
      ? null
      : s.type === RopeScalingType.Linear
        ? { rope_type: 'linear', factor: s.factor }
        : {
            rope_type: 'llama3',
            factor: s.factor,
            low_freq_factor: s.lowFreqFactor,
            high_freq_factor: s.highFreqFactor,
            original_max_position_embeddings: s.originalContextLength,
          }
  const eos = tokens.eosTokenIds
  return {
    architectures: [architecture],
    model_type: MODEL_TYPE[architecture],
    hidden_size: config.width,
    num_hidden_layers: config.layers,
    num_attention_heads: config.heads,
    num_key_value_heads: config.kvHeads,
    head_dim: config.headDim,
    intermediate_size: config.mlpHidden,
    vocab_size: config.vocabSize,
    max_position_embeddings: config.contextLength,
    rope_theta: config.ropeTheta,
    rope_scaling: ropeScaling,
    rms_norm_eps: config.normEps,
    tie_word_embeddings: config.tiedEmbeddings,
    hidden_act: 'silu',
    attention_dropout: 0,
    ...(architecture === HfArchitecture.Qwen2 ? {} : { attention_bias: false }),
    ...(architecture === HfArchitecture.Llama ? { mlp_bias: false } : { use_sliding_window: false }),
    ...(tokens.bosTokenId !== undefined ? { bos_token_id: tokens.bosTokenId } : {}),
    ...(eos.length ? { eos_token_id: eos.length === 1 ? eos[0] : [...eos] } : {}),
    ...(tokens.padTokenId !== undefined ? { pad_token_id: tokens.padTokenId } : {}),
    torch_dtype: options.torchDtype ?? 'float32',
    use_cache: true,
  }
}
