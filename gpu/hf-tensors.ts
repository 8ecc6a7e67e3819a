import type { NamedTensor } from './safetensors.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/**
 * Hugging Face tensor names and layouts (`model.layers.N.self_attn.q_proj.weight`, ...) against
 * triad's parameters (`paramShapes`). HF linear weights are `[out, in]` (`y = x W^T + b`); triad's are
 * `[in, out]` (`y = x W`) with q, k, v side by side in `qkv` and gate, up side by side in `gate_up`.
 * The embedding and the output head are `[vocab, width]` in both.
 */

/** HF names and shapes every model of this config has, in file order. */
export function hfTensorShapes(config: FullTransformerConfig): [string, number[]][] {
  const { width: d, mlpHidden: f, vocabSize: v, headDim: hd } = config
  const q = config.heads * hd
  const kv = config.kvHeads * hd
  const out: [string, number[]][] = [['model.embed_tokens.weight', [v, d]]]
  for (let i = 0; i < config.layers; i++) {
    const l = `model.layers.${i}`
    out.push(
      [`${l}.input_layernorm.weight`, [d]],
      [`${l}.self_attn.q_proj.weight`, [q, d]],
      [`${l}.self_attn.k_proj.weight`, [kv, d]],
      [`${l}.self_attn.v_proj.weight`, [kv, d]],
    )
    if (config.qkvBias)
      out.push(
        [`${l}.self_attn.q_proj.bias`, [q]],
        [`${l}.self_attn.k_proj.bias`, [kv]],
        [`${l}.self_attn.v_proj.bias`, [kv]],
      )
    if (config.qkNorm)
      out.push([`${l}.self_attn.q_norm.weight`, [hd]], [`${l}.self_attn.k_norm.weight`, [hd]])
    out.push(
      [`${l}.self_attn.o_proj.weight`, [d, q]],
      [`${l}.post_attention_layernorm.weight`, [d]],
      [`${l}.mlp.gate_proj.weight`, [f, d]],
      [`${l}.mlp.up_proj.weight`, [f, d]],
      [`${l}.mlp.down_proj.weight`, [d, f]],
    )
  }
  out.push(['model.norm.weight', [d]])
  if (!config.tiedEmbeddings) out.push(['lm_head.weight', [v, d]])
  return out
}

/** HF tensors a loader skips: the rotary table some Llama checkpoints store, a tied head's copy. */
export function isIgnoredHfTensor(name: string, config: FullTransformerConfig): boolean {
  return name.endsWith('.rotary_emb.inv_freq') || (config.tiedEmbeddings && name === 'lm_head.weight')
}

/** `[rows, cols]` row-major to its transpose `[cols, rows]`. */
function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length)
  for (let r = 0; r < rows; r++) {
    const from = r * cols
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[from + c]!
  }
  return out
}

/** Transposes `[out_k, in]` blocks and sets them side by side: `[in, sum out_k]`. */
function sideBySide(blocks: readonly Float32Array[], outs: readonly number[], inner: number): Float32Array {
  const total = outs.reduce((a, b) => a + b, 0)
  const out = new Float32Array(inner * total)
  let col0 = 0
  blocks.forEach((block, k) => {
    const n = outs[k]!
    for (let o = 0; o < n; o++) {
      const from = o * inner
      for (let i = 0; i < inner; i++) out[i * total + col0 + o] = block[from + i]!
    }
    col0 += n
  })
  return out
}

/** Inverse of `sideBySide`: `[in, sum out_k]` to `[out_k, in]` blocks. */
function split(data: Float32Array, outs: readonly number[], inner: number): Float32Array[] {
  const total = outs.reduce((a, b) => a + b, 0)
  let col0 = 0
  return outs.map((n) => {
    const block = new Float32Array(n * inner)
    for (let o = 0; o < n; o++)
      for (let i = 0; i < inner; i++) block[o * inner + i] = data[i * total + col0 + o]!
    col0 += n
    return block
  })
}

/**
 * triad weights from HF tensors (already checked against `hfTensorShapes`).
 * @param take returns a tensor's values by HF name and may drop its own reference (each is asked
 *   for once).
 */
export function fromHfTensors(
  config: FullTransformerConfig,
  take: (name: string) => Float32Array,
): Record<string, Float32Array> {
  const { width: d, mlpHidden: f, headDim: hd } = config
  const q = config.heads * hd
  const kv = config.kvHeads * hd
  const w: Record<string, Float32Array> = { embed: take('model.embed_tokens.weight') }
  for (let i = 0; i < config.layers; i++) {
    const l = `model.layers.${i}`
    const t = `layers.${i}`
    w[`${t}.attn_norm`] = take(`${l}.input_layernorm.weight`)
    w[`${t}.qkv`] = sideBySide(
      [
        take(`${l}.self_attn.q_proj.weight`),
        take(`${l}.self_attn.k_proj.weight`),
        take(`${l}.self_attn.v_proj.weight`),
      ],
      [q, kv, kv],
      d,
    )
    if (config.qkvBias) {
      const bias = new Float32Array(q + 2 * kv)
      bias.set(take(`${l}.self_attn.q_proj.bias`), 0)
      bias.set(take(`${l}.self_attn.k_proj.bias`), q)
      bias.set(take(`${l}.self_attn.v_proj.bias`), q + kv)
      w[`${t}.qkv_bias`] = bias
    }
    if (config.qkNorm) {
      w[`${t}.q_norm`] = take(`${l}.self_attn.q_norm.weight`)
      w[`${t}.k_norm`] = take(`${l}.self_attn.k_norm.weight`)
    }
    w[`${t}.attn_out`] = transpose(take(`${l}.self_attn.o_proj.weight`), d, q)
    w[`${t}.mlp_norm`] = take(`${l}.post_attention_layernorm.weight`)
    w[`${t}.gate_up`] = sideBySide(
      [take(`${l}.mlp.gate_proj.weight`), take(`${l}.mlp.up_proj.weight`)],
      [f, f],
      d,
    )
    w[`${t}.down`] = transpose(take(`${l}.mlp.down_proj.weight`), d, f)
  }
  w.final_norm = take('model.norm.weight')
  if (!config.tiedEmbeddings) w.lm_head = take('lm_head.weight')
  return w
}

/** HF tensors from triad weights (the inverse of `fromHfTensors`). */
export function toHfTensors(
  config: FullTransformerConfig,
  weights: Readonly<Record<string, Float32Array>>,
): Record<string, NamedTensor> {
  const { width: d, mlpHidden: f, headDim: hd } = config
  const q = config.heads * hd
  const kv = config.kvHeads * hd
  const shapes = new Map(hfTensorShapes(config))
  const out: Record<string, NamedTensor> = {}
  const put = (name: string, data: Float32Array) => {
    out[name] = { shape: shapes.get(name)!, data }
  }
  put('model.embed_tokens.weight', weights.embed!)
  for (let i = 0; i < config.layers; i++) {
    const l = `model.layers.${i}`
    const t = `layers.${i}`
    put(`${l}.input_layernorm.weight`, weights[`${t}.attn_norm`]!)
    const [wq, wk, wv] = split(weights[`${t}.qkv`]!, [q, kv, kv], d)
    put(`${l}.self_attn.q_proj.weight`, wq!)
    put(`${l}.self_attn.k_proj.weight`, wk!)
    put(`${l}.self_attn.v_proj.weight`, wv!)
    if (config.qkvBias) {
      const b = weights[`${t}.qkv_bias`]!
      put(`${l}.self_attn.q_proj.bias`, b.slice(0, q))
      put(`${l}.self_attn.k_proj.bias`, b.slice(q, q + kv))
      put(`${l}.self_attn.v_proj.bias`, b.slice(q + kv))
    }
    if (config.qkNorm) {
      put(`${l}.self_attn.q_norm.weight`, weights[`${t}.q_norm`]!)
      put(`${l}.self_attn.k_norm.weight`, weights[`${t}.k_norm`]!)
    }
    put(`${l}.self_attn.o_proj.weight`, transpose(weights[`${t}.attn_out`]!, q, d))
    put(`${l}.post_attention_layernorm.weight`, weights[`${t}.mlp_norm`]!)
    const [gate, up] = split(weights[`${t}.gate_up`]!, [f, f], d)
    put(`${l}.mlp.gate_proj.weight`, gate!)
    put(`${l}.mlp.up_proj.weight`, up!)
    put(`${l}.mlp.down_proj.weight`, transpose(weights[`${t}.down`]!, f, d))
  }
  put('model.norm.weight', weights.final_norm!)
  if (!config.tiedEmbeddings) put('lm_head.weight', weights.lm_head!)
  return out
}
