import type { NamedTensor } from '../../gpu/index.ts'
import type { TestHfSpec } from './hf-checkpoint.ts'

/**
 * Reference forward pass of the Llama family, written from the published architecture
 * (transformers' modeling_llama / modeling_qwen2 / modeling_qwen3, Llama 3.1's rope scaling) in
 * plain float64 loops over the HF tensors, independent of gpu/transformer.ts:
 *   x = E[ids]; per layer: h = rms(x) * w_in; q = h Wq^T (+ bq), k, v likewise; Qwen3: q, k
 *   RMS-normed per head; rope with rotate_half(x) = [-x2, x1] over the head size, inv_freq_j =
 *   theta^(-2j/hd) (scaled); query head j attends with kv head floor(j / (H / KV)); scores / sqrt(hd),
 *   causal softmax; x += o_proj(attn); x += down(silu(gate(rms(x))) * up(rms(x))); logits = rms(x) W_head^T.
 */
export function referenceLogits(spec: TestHfSpec, w: Record<string, NamedTensor>, ids: number[]): number[][] {
  const { hidden_size: d, head_dim: hd, num_attention_heads: H, num_key_value_heads: KV } = spec
  const eps = spec.rms_norm_eps
  const f = spec.intermediate_size
  const get = (n: string) => {
    const t = w[n]
    if (!t) throw new Error(`reference: no tensor ${n}`)
    return t.data
  }
  const rms = (x: number[], g: ArrayLike<number>): number[] => {
    const ms = x.reduce((s, v) => s + v * v, 0) / x.length
    const r = 1 / Math.sqrt(ms + eps)
    return x.map((v, i) => v * r * g[i]!)
  }
  /** y = W x (+ b), W `[out, in]` row-major. */
  const linear = (W: ArrayLike<number>, x: number[], out: number, b?: ArrayLike<number>): number[] => {
    const y = new Array<number>(out).fill(0)
    for (let o = 0; o < out; o++) {
      let s = b ? b[o]! : 0
      for (let i = 0; i < x.length; i++) s += W[o * x.length + i]! * x[i]!
      y[o] = s
    }
    return y
  }
  const invFreq: number[] = []
  for (let j = 0; j < hd / 2; j++) invFreq.push(1 / spec.rope_theta ** ((2 * j) / hd))
  const rs = spec.rope_scaling
  const ropeType = rs?.rope_type ?? rs?.type // transformers reads either key
  if (rs && ropeType === 'linear') for (let j = 0; j < invFreq.length; j++) invFreq[j]! /= rs.factor as number
  if (rs && ropeType === 'llama3') {
    const factor = rs.factor as number
    const low = rs.low_freq_factor as number
    const high = rs.high_freq_factor as number
    const old = rs.original_max_position_embeddings as number
    for (let j = 0; j < invFreq.length; j++) {
      const wavelen = (2 * Math.PI) / invFreq[j]!
      if (wavelen < old / high) continue
      if (wavelen > old / low) invFreq[j]! /= factor
      else {
        const smooth = (old / wavelen - low) / (high - low)
        invFreq[j] = (1 - smooth) * (invFreq[j]! / factor) + smooth * invFreq[j]!
      }
    }
  }
  const rope = (x: number[], pos: number): number[] => {
    const half = hd / 2
    const out = new Array<number>(hd)
    for (let i = 0; i < hd; i++) {
      const freq = invFreq[i % half]! * pos // emb = cat(freqs, freqs)
      const rot = i < half ? -x[i + half]! : x[i - half]! // rotate_half
      out[i] = x[i]! * Math.cos(freq) + rot * Math.sin(freq)
    }
    return out
  }
  let xs = ids.map((id) => Array.from(get('model.embed_tokens.weight').subarray(id * d, (id + 1) * d)))
  for (let l = 0; l < spec.num_hidden_layers; l++) {
    const p = `model.layers.${l}`
    const bias = (n: string) => w[`${p}.self_attn.${n}.bias`]?.data
    const qs: number[][][] = []
    const ks: number[][][] = []
    const vs: number[][][] = []
    xs.forEach((x, t) => {
      const h = rms(x, get(`${p}.input_layernorm.weight`))
      const q = linear(get(`${p}.self_attn.q_proj.weight`), h, H * hd, bias('q_proj'))
      const k = linear(get(`${p}.self_attn.k_proj.weight`), h, KV * hd, bias('k_proj'))
      const v = linear(get(`${p}.self_attn.v_proj.weight`), h, KV * hd, bias('v_proj'))
      const heads = (a: number[], n: number) =>
        Array.from({ length: n }, (_, j) => a.slice(j * hd, (j + 1) * hd))
      let qh = heads(q, H)
      let kh = heads(k, KV)
      if (spec.architecture === 'Qwen3ForCausalLM') {
        qh = qh.map((x) => rms(x, get(`${p}.self_attn.q_norm.weight`)))
        kh = kh.map((x) => rms(x, get(`${p}.self_attn.k_norm.weight`)))
      }
      qs.push(qh.map((x) => rope(x, t)))
      ks.push(kh.map((x) => rope(x, t)))
      vs.push(heads(v, KV))
    })
    xs = xs.map((x, t) => {
      const attn: number[] = []
      for (let j = 0; j < H; j++) {
        const g = Math.floor(j / (H / KV))
        const scores: number[] = []
        for (let s = 0; s <= t; s++)
          scores.push(qs[t]![j]!.reduce((a, qv, i) => a + qv * ks[s]![g]![i]!, 0) / Math.sqrt(hd))
        const m = Math.max(...scores)
        const e = scores.map((s) => Math.exp(s - m))
        const z = e.reduce((a, b) => a + b, 0)
        for (let i = 0; i < hd; i++) attn.push(e.reduce((a, p, s) => a + (p / z) * vs[s]![g]![i]!, 0))
      }
      const o = linear(get(`${p}.self_attn.o_proj.weight`), attn, d)
      const x1 = x.map((v, i) => v + o[i]!)
      const h2 = rms(x1, get(`${p}.post_attention_layernorm.weight`))
      const gate = linear(get(`${p}.mlp.gate_proj.weight`), h2, f)
      const up = linear(get(`${p}.mlp.up_proj.weight`), h2, f)
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!)
      const down = linear(get(`${p}.mlp.down_proj.weight`), act, d)
      return x1.map((v, i) => v + down[i]!)
    })
  }
  const head = spec.tie_word_embeddings ? get('model.embed_tokens.weight') : get('lm_head.weight')
  return xs.map((x) => linear(head, rms(x, get('model.norm.weight')), spec.vocab_size))
}
