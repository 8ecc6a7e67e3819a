import { ConfigError } from './errors.ts'
import { createRng } from './prng.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/**
 * LoRA: low-rank adapters on a model's projections (Hu et al. 2021, "LoRA: Low-Rank Adaptation of
 * Large Language Models", eq. 3): a frozen weight `W` is used as `W + (alpha / rank) B A`, and only
 * `A` and `B` are trained. In Hugging Face's `[out, in]` orientation `A` is `[rank, in]` and `B`
 * `[out, rank]`; triad's weights multiply on the right (`x W`, `W` `[in, out]`), so triad stores
 * the transposes: `lora_a` `[in, rank]` and `lora_b` `[rank, out]`, and a layer computes
 * `x W + (alpha / rank) (x A) B`. `B` starts at zero, so a fresh adapter leaves the model's output
 * unchanged; `A` starts uniform in `[-1/sqrt(in), 1/sqrt(in)]` (PEFT's Kaiming-uniform default with
 * `a = sqrt(5)`).
 */

/**
 * Projections an adapter can sit on, by their Hugging Face module names (PEFT's `target_modules`):
 * attention queries, keys, values and output; the gated MLP's gate, up and down projections.
 */
export const LoraTarget = {
  Query: 'q_proj',
  Key: 'k_proj',
  Value: 'v_proj',
  Output: 'o_proj',
  Gate: 'gate_proj',
  Up: 'up_proj',
  Down: 'down_proj',
} as const
export type LoraTarget = (typeof LoraTarget)[keyof typeof LoraTarget]

/** Settings of the adapters. */
export interface LoraConfig {
  /** `r`: inner size of every adapter, a positive integer (default 8). */
  rank?: number
  /** `alpha`: the update is scaled by `alpha / rank`, > 0 (default `2 * rank`). */
  alpha?: number
  /** Projections with an adapter, at least one (default all seven, QLoRA's "all linear layers"). */
  targets?: readonly LoraTarget[]
  /**
   * Dropout probability on an adapter's input while gradients are taken (`lossAndGrads`), in
   * [0, 1) (default 0). Forward passes without gradients (sampling, proximal log-probabilities)
   * never drop.
   */
  dropout?: number
}

/** A `LoraConfig` with every default filled in. */
export interface FullLoraConfig {
  rank: number
  alpha: number
  targets: LoraTarget[]
  dropout: number
}

/**
 * Fills in the defaults and checks the settings.
 * @throws ConfigError naming `lora.rank` (not a positive integer), `lora.alpha` (not > 0),
 *   `lora.targets` (empty, or an unknown name, listing the valid ones), `lora.dropout` (outside [0, 1)).
 */
export function fullLoraConfig(config: LoraConfig): FullLoraConfig {
  const rank = config.rank ?? 8
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank <= 0)
    throw new ConfigError('lora.rank', rank, 'must be a positive integer')
  const alpha = config.alpha ?? 2 * rank
  if (typeof alpha !== 'number' || !(alpha > 0)) throw new ConfigError('lora.alpha', alpha, 'must be > 0')
  const known = Object.values(LoraTarget) as string[]
  const targets = [...(config.targets ?? Object.values(LoraTarget))]
  if (targets.length === 0)
    throw new ConfigError('lora.targets', targets, `name at least one of ${known.join(', ')}`)
  for (const t of targets)
    if (!known.includes(t))
      throw new ConfigError('lora.targets', t, `is not a projection; valid targets: ${known.join(', ')}`)
  const dropout = config.dropout ?? 0
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1))
    throw new ConfigError('lora.dropout', dropout, 'must be in [0, 1)')
  return { rank, alpha, targets: [...new Set(targets)] as LoraTarget[], dropout }
}

/** The update's scale `alpha / rank` (Hu et al. 2021, section 4.1). */
export function loraScale(config: FullLoraConfig): number {
  return config.alpha / config.rank
}

/**
 * Input and output size of a target's projection: q `[width, heads*headDim]`, k and v `[width,
 * kvHeads*headDim]`, o `[heads*headDim, width]`, gate and up `[width, mlpHidden]`, down
 * `[mlpHidden, width]`.
 */
export function projectionSize(
  config: FullTransformerConfig,
  target: LoraTarget,
): { in: number; out: number } {
  const q = config.heads * config.headDim
  const kv = config.kvHeads * config.headDim
  const d = config.width
  const f = config.mlpHidden
  switch (target) {
    case LoraTarget.Query:
      return { in: d, out: q }
    case LoraTarget.Key:
    case LoraTarget.Value:
      return { in: d, out: kv }
    case LoraTarget.Output:
      return { in: q, out: d }
    case LoraTarget.Gate:
    case LoraTarget.Up:
      return { in: d, out: f }
    case LoraTarget.Down:
      return { in: f, out: d }
  }
}

/** Name of an adapter matrix: `layers.<i>.<target>.lora_a` or `.lora_b`. */
export const adapterName = (layer: number, target: LoraTarget, matrix: 'a' | 'b') =>
  `layers.${layer}.${target}.lora_${matrix}`

/**
 * Names and shapes of every adapter matrix, layer by layer in `targets` order: `lora_a` `[in,
 * rank]` then `lora_b` `[rank, out]` (see `projectionSize`).
 */
export function adapterShapes(config: FullTransformerConfig, lora: FullLoraConfig): [string, number[]][] {
  const out: [string, number[]][] = []
  for (let i = 0; i < config.layers; i++)
    for (const t of lora.targets) {
      const s = projectionSize(config, t)
      out.push([adapterName(i, t, 'a'), [s.in, lora.rank]], [adapterName(i, t, 'b'), [lora.rank, s.out]])
    }
  return out
}

/**
 * Initial adapters from a seed: `lora_a` uniform in `[-1/sqrt(in), 1/sqrt(in)]` (PEFT's
 * `kaiming_uniform_(a=sqrt(5))`), `lora_b` zero, so `B A = 0` and the model is unchanged.
 */
export function initAdapters(
  config: FullTransformerConfig,
  lora: FullLoraConfig,
  seed: number,
): Record<string, Float32Array> {
  const rng = createRng(seed)
  const out: Record<string, Float32Array> = {}
  for (const [name, shape] of adapterShapes(config, lora)) {
    const data = new Float32Array(shape[0]! * shape[1]!)
    if (name.endsWith('lora_a')) {
      const bound = 1 / Math.sqrt(shape[0]!)
      for (let k = 0; k < data.length; k++) data[k] = (2 * rng.next() - 1) * bound
    }
    out[name] = data
  }
  return out
}

/** Where a target's weight sits in triad's fused parameters: the parameter and its column range. */
function baseSlot(config: FullTransformerConfig, layer: number, target: LoraTarget) {
  const q = config.heads * config.headDim
  const kv = config.kvHeads * config.headDim
  const f = config.mlpHidden
  const at = (param: string, col0: number, cols: number, total: number) => ({
    param: `layers.${layer}.${param}`,
    col0,
    cols,
    total,
  })
  switch (target) {
    case LoraTarget.Query:
      return at('qkv', 0, q, q + 2 * kv)
    case LoraTarget.Key:
      return at('qkv', q, kv, q + 2 * kv)
    case LoraTarget.Value:
      return at('qkv', q + kv, kv, q + 2 * kv)
    case LoraTarget.Output:
      return at('attn_out', 0, config.width, config.width)
    case LoraTarget.Gate:
      return at('gate_up', 0, f, 2 * f)
    case LoraTarget.Up:
      return at('gate_up', f, f, 2 * f)
    case LoraTarget.Down:
      return at('down', 0, config.width, config.width)
  }
}

/**
 * The weights with the adapters folded in, `W + (alpha / rank) A B` in triad's orientation (HF's
 * `W + (alpha / rank) B A`, Hu et al. 2021 section 4.1, "no additional inference latency"): the
 * model that `triad export --hf` writes and any Hugging Face loader reads without adapters. Returns
 * new arrays for the changed parameters; the others are the given ones.
 * @param weights every base parameter (`paramShapes` names). @param adapters every `adapterShapes` matrix.
 */
export function mergeAdapters(
  weights: Readonly<Record<string, Float32Array>>,
  adapters: Readonly<Record<string, Float32Array>>,
  config: FullTransformerConfig,
  lora: FullLoraConfig,
): Record<string, Float32Array> {
  const out: Record<string, Float32Array> = { ...weights }
  const scale = loraScale(lora)
  const r = lora.rank
  for (let i = 0; i < config.layers; i++)
    for (const t of lora.targets) {
      const { in: rows } = projectionSize(config, t)
      const slot = baseSlot(config, i, t)
      const a = adapters[adapterName(i, t, 'a')]!
      const b = adapters[adapterName(i, t, 'b')]!
      if (out[slot.param] === weights[slot.param]) out[slot.param] = weights[slot.param]!.slice()
      const w = out[slot.param]!
      for (let row = 0; row < rows; row++)
        for (let c = 0; c < slot.cols; c++) {
          let s = 0
          for (let k = 0; k < r; k++) s += a[row * r + k]! * b[k * slot.cols + c]! // (A B)[row, c]
          w[row * slot.total + slot.col0 + c]! += scale * s // W + (alpha / r) A B
        }
    }
  return out
}

/** HF module path of a target inside a layer (`self_attn.q_proj`, `mlp.down_proj`). */
function hfModule(target: LoraTarget): string {
  const attention: readonly LoraTarget[] = [
    LoraTarget.Query,
    LoraTarget.Key,
    LoraTarget.Value,
    LoraTarget.Output,
  ]
  return attention.includes(target) ? `self_attn.${target}` : `mlp.${target}`
}

/**
 * PEFT's tensor name of an adapter matrix (`adapter_model.safetensors` as PEFT saves a
 * `LlamaForCausalLM`-style model): `base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight`.
 */
export const peftTensorName = (layer: number, target: LoraTarget, matrix: 'a' | 'b') =>
  `base_model.model.model.layers.${layer}.${hfModule(target)}.lora_${matrix === 'a' ? 'A' : 'B'}.weight`

/** `[rows, cols]` row-major to `[cols, rows]`. */
function transposed(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length)
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!
  return out
}

/**
 * Adapters in PEFT's layout: `lora_A.weight` `[rank, in]` and `lora_B.weight` `[out, rank]` (the
 * transposes of triad's `lora_a` `[in, rank]` and `lora_b` `[rank, out]`), under `peftTensorName`.
 */
export function toPeftTensors(
  adapters: Readonly<Record<string, Float32Array>>,
  config: FullTransformerConfig,
  lora: FullLoraConfig,
): Record<string, { shape: number[]; data: Float32Array }> {
  const out: Record<string, { shape: number[]; data: Float32Array }> = {}
  for (let i = 0; i < config.layers; i++)
    for (const t of lora.targets) {
      const s = projectionSize(config, t)
      out[peftTensorName(i, t, 'a')] = {
        shape: [lora.rank, s.in],
        data: transposed(adapters[adapterName(i, t, 'a')]!, s.in, lora.rank),
      }
      out[peftTensorName(i, t, 'b')] = {
        shape: [s.out, lora.rank],
        data: transposed(adapters[adapterName(i, t, 'b')]!, lora.rank, s.out),
      }
    }
  return out
}

/**
 * Inverse of `toPeftTensors`, checked: every adapter present with PEFT's shape, nothing else.
 * @throws ConfigError naming the tensor that is missing, misshapen (expected and found) or unexpected.
 */
export function fromPeftTensors(
  tensors: Readonly<Record<string, { shape: readonly number[]; data: Float32Array }>>,
  config: FullTransformerConfig,
  lora: FullLoraConfig,
): Record<string, Float32Array> {
  const out: Record<string, Float32Array> = {}
  const seen = new Set<string>()
  for (let i = 0; i < config.layers; i++)
    for (const t of lora.targets) {
      const s = projectionSize(config, t)
      for (const [m, rows, cols] of [
        ['a', lora.rank, s.in],
        ['b', s.out, lora.rank],
      ] as const) {
        const name = peftTensorName(i, t, m)
        const tensor = tensors[name]
        if (!tensor) throw new ConfigError('adapter', name, 'is missing')
        if (tensor.shape.join(',') !== `${rows},${cols}`)
          throw new ConfigError(
            'adapter',
            name,
            `has shape [${tensor.shape.join(', ')}], expected [${rows}, ${cols}]`,
          )
        out[adapterName(i, t, m)] = transposed(tensor.data, rows, cols)
        seen.add(name)
      }
    }
  for (const name of Object.keys(tensors))
    if (!seen.has(name)) throw new ConfigError('adapter', name, 'is not an adapter of these settings')
  return out
}

/**
 * PEFT's `adapter_config.json` for these settings, so PEFT (`PeftModel.from_pretrained`) and vLLM's
 * LoRA loader read the adapter beside its base model.
 * @param base the base model's directory (`base_model_name_or_path`).
 */
export function peftAdapterConfig(lora: FullLoraConfig, base: string): Record<string, unknown> {
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: base,
    r: lora.rank,
    lora_alpha: lora.alpha,
    lora_dropout: lora.dropout,
    target_modules: [...lora.targets],
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
  }
}
