import * as tf from '@tensorflow/tfjs'
import { ConfigError, ShapeError } from './errors.ts'
import {
  fusedAttention,
  rope as fusedRope,
  rmsNorm,
  swiglu,
  tokenEntropy,
  tokenLogprob,
} from './fused-ops.ts'
import type { KvCache } from './kv-cache.ts'
import {
  adapterName,
  adapterShapes,
  type FullLoraConfig,
  fullLoraConfig,
  initAdapters,
  type LoraConfig,
  LoraTarget,
  loraScale,
} from './lora.ts'
import { loraUpdate } from './lora-update.ts'
import { maskedSoftmax } from './masked-softmax.ts'
import { matmul, matmulFrozen, matmulT, matmulTFrozen, transposeFlagsAreFast } from './matmul.ts'
import { createRng } from './prng.ts'
import './segment-sum-kernel.ts'
import {
  type FullTransformerConfig,
  fullConfig,
  RopeScalingType,
  type TransformerConfig,
} from './transformer-config.ts'

/**
 * Decoder-only transformer: token embedding, `layers` pre-norm blocks of RMSNorm -> causal
 * multi-head attention with rotary positions -> residual, RMSNorm -> SwiGLU MLP -> residual, then a
 * final RMSNorm and the output projection (tied with the embedding, or its own `lm_head`).
 *
 * One implementation for triad's own models and the Llama family of pretrained models
 * (`LlamaForCausalLM`, `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, see `hf-model.ts`): grouped-query
 * attention (`kvHeads` key/value heads shared by `heads / kvHeads` query heads each, Ainslie et al.
 * 2023), a head size independent of the width (`headDim`), q/k/v biases (Qwen2), per-head RMSNorm
 * of queries and keys before the rotation (Qwen3), rotary frequency scaling (`ropeScaling`: linear
 * position interpolation, Chen et al. 2023; Llama 3.1's piecewise scaling).
 *
 * Sources: RMSNorm (Zhang & Sennrich 2019, eq. 4); rotary positions (Su et al. 2021, RoFormer,
 * eq. 34, the "rotate half" layout of GPT-NeoX); SwiGLU (Shazeer 2020, eq. 6); tied embeddings
 * (Press & Wolf 2017).
 *
 * Built for the wasm backend: the embedding gradient is a scatter-add (`unsortedSegmentSum`, O(tokens
 * x width), registered for wasm in `segment-sum-kernel.ts`; a one-hot matmul would cost O(tokens x
 * vocab x width), 150,000 times the work at Qwen's vocabulary), every weight matmul is 2-D (`[rows,
 * width]`), and attention uses 3-D batched matmuls with equal batch sizes (no broadcasting).
 */

/** A model: its config and its parameters as named tfjs variables. */
export interface Transformer {
  readonly config: FullTransformerConfig
  /**
   * Trained parameters by name, float32: every weight (`paramShapes` order) under full
   * fine-tuning; under LoRA the adapters alone (`adapterShapes` order). What the optimizer updates,
   * `getWeights` returns, checkpoints hold and weight versions carry.
   */
  readonly params: ReadonlyMap<string, tf.Variable>
  /** Frozen weights by name (not trainable): every `paramShapes` weight under LoRA, else none. */
  readonly frozen: ReadonlyMap<string, tf.Variable>
  /** The adapters' settings and dropout state, when the model has LoRA adapters (`lora.ts`). */
  readonly lora?: LoraState
  /** Rotary cosine table `[contextLength, headDim]` float32 (constant). */
  readonly ropeCos: tf.Tensor2D
  /** Rotary sine table `[contextLength, headDim]` float32, sign of the rotate-half folded in. */
  readonly ropeSin: tf.Tensor2D
  /** Rotate-half permutation `[headDim, headDim]`: `x @ rotateHalf = [x2, x1]`. */
  readonly rotateHalf: tf.Tensor2D
}

/** The LoRA settings of a model with adapters, and the dropout state `lossAndGrads` drives. */
export interface LoraState {
  readonly config: FullLoraConfig
  /** `alpha / rank`. */
  readonly scale: number
  /**
   * Seed of the adapter-input dropout masks while a loss is differentiated (`lossAndGrads` sets
   * it and clears it after); undefined: no dropout (sampling, evaluation, proximal passes).
   */
  dropoutSeed: number | undefined
  /** Seeds handed out so far; the next `lossAndGrads` uses `seed + draws`. */
  draws: number
  /** Base of the dropout seeds. */
  readonly seed: number
  /**
   * Where the frozen weights come from (a Hugging Face model directory or a triad checkpoint),
   * recorded in a checkpoint of the adapters so that loading it finds them.
   */
  readonly base: string | undefined
}

/** A weight by name: trained (`params`) or frozen (`frozen`). @throws ShapeError when the model has none. */
export function weightOf(model: Transformer, name: string): tf.Variable {
  const w = model.params.get(name) ?? model.frozen.get(name)
  if (!w) throw new ShapeError(name, 'a weight of this model', [])
  return w
}

/** Models whose frozen weights and rotary tables belong to another model (`withAdapters`). */
const borrowed = new WeakSet<Transformer>()

/**
 * Names and shapes of every parameter, in a fixed order, with `q = heads * headDim` and `kv =
 * kvHeads * headDim`: `embed` `[vocabSize, width]`; per layer `layers.<i>.attn_norm` `[width]`,
 * `layers.<i>.qkv` `[width, q + 2*kv]` (q, k, v side by side), `layers.<i>.qkv_bias` `[q + 2*kv]`
 * (with `qkvBias`), `layers.<i>.q_norm` and `layers.<i>.k_norm` `[headDim]` (with `qkNorm`),
 * `layers.<i>.attn_out` `[q, width]`, `layers.<i>.mlp_norm` `[width]`, `layers.<i>.gate_up`
 * `[width, 2*mlpHidden]` (gate, up), `layers.<i>.down` `[mlpHidden, width]`; `final_norm`
 * `[width]`; `lm_head` `[vocabSize, width]` (untied only). Weights multiply on the right (`x @ W`),
 * except `embed` and `lm_head` (`h @ W^T`).
 */
export function paramShapes(config: FullTransformerConfig): [string, number[]][] {
  const { width: d, mlpHidden: f, vocabSize: v } = config
  const q = config.heads * config.headDim
  const kv = config.kvHeads * config.headDim
  const shapes: [string, number[]][] = [['embed', [v, d]]]
  for (let i = 0; i < config.layers; i++) {
    shapes.push([`layers.${i}.attn_norm`, [d]], [`layers.${i}.qkv`, [d, q + 2 * kv]])
    if (config.qkvBias) shapes.push([`layers.${i}.qkv_bias`, [q + 2 * kv]])
    if (config.qkNorm)
      shapes.push([`layers.${i}.q_norm`, [config.headDim]], [`layers.${i}.k_norm`, [config.headDim]])
    shapes.push(
      [`layers.${i}.attn_out`, [q, d]],
      [`layers.${i}.mlp_norm`, [d]],
      [`layers.${i}.gate_up`, [d, 2 * f]],
      [`layers.${i}.down`, [f, d]],
    )
  }
  shapes.push(['final_norm', [d]])
  if (!config.tiedEmbeddings) shapes.push(['lm_head', [v, d]])
  return shapes
}

/** Bytes of a model's parameters held as float32 (what loading it allocates on the backend). */
export function parameterBytes(config: TransformerConfig): number {
  return 4 * parameterCount(config)
}

/** Number of parameters (tied embedding counted once). */
export function parameterCount(config: TransformerConfig): number {
  return paramShapes(fullConfig(config)).reduce((s, [, shape]) => s + shape.reduce((a, b) => a * b, 1), 0)
}

/**
 * Initial weights as plain arrays, from a seed: norms 1, biases 0, weights normal with std 0.02, residual
 * output projections (`attn_out`, `down`) scaled by `1/sqrt(2*layers)` (GPT-2). Identical on every
 * backend.
 */
export function initWeights(config: TransformerConfig, seed: number): Record<string, Float32Array> {
  const full = fullConfig(config)
  const rng = createRng(seed)
  const out: Record<string, Float32Array> = {}
  const residualStd = 0.02 / Math.sqrt(2 * full.layers)
  for (const [name, shape] of paramShapes(full)) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1))
    if (name.endsWith('_bias')) data.fill(0)
    else if (shape.length === 1) data.fill(1)
    else {
      const std = name.endsWith('attn_out') || name.endsWith('down') ? residualStd : 0.02
      for (let k = 0; k < data.length; k++) data[k] = rng.normal() * std
    }
    out[name] = data
  }
  return out
}

/**
 * Rotary inverse frequencies `theta_j = base^(-2j/headDim)` (RoFormer eq. 15), j < headDim/2, after
 * the config's `ropeScaling`.
 */
export function ropeInverseFrequencies(config: FullTransformerConfig): Float64Array {
  const hd = config.headDim
  const inv = new Float64Array(hd / 2)
  for (let j = 0; j < hd / 2; j++) inv[j] = config.ropeTheta ** ((-2 * j) / hd)
  const s = config.ropeScaling
  if (s.type === RopeScalingType.Linear) for (let j = 0; j < inv.length; j++) inv[j]! /= s.factor
  else if (s.type === RopeScalingType.Llama3) {
    const lowFreqWavelen = s.originalContextLength / s.lowFreqFactor
    const highFreqWavelen = s.originalContextLength / s.highFreqFactor
    for (let j = 0; j < inv.length; j++) {
      const wavelen = (2 * Math.PI) / inv[j]!
      if (wavelen > lowFreqWavelen)
        inv[j]! /= s.factor // long wavelengths: interpolated
      else if (wavelen >= highFreqWavelen) {
        // between: blend, smooth = (original / wavelen - low) / (high - low)
        const smooth =
          (s.originalContextLength / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor)
        inv[j] = ((1 - smooth) * inv[j]!) / s.factor + smooth * inv[j]!
      } // short wavelengths: kept
    }
  }
  return inv
}

function ropeTables(config: FullTransformerConfig): {
  cos: Float32Array
  sin: Float32Array
  rot: Float32Array
} {
  const hd = config.headDim
  const half = hd / 2
  const inv = ropeInverseFrequencies(config)
  const cos = new Float32Array(config.contextLength * hd)
  const sin = new Float32Array(config.contextLength * hd)
  for (let p = 0; p < config.contextLength; p++) {
    for (let j = 0; j < half; j++) {
      const angle = p * inv[j]!
      const c = Math.cos(angle)
      const s = Math.sin(angle)
      cos[p * hd + j] = c
      cos[p * hd + half + j] = c
      sin[p * hd + j] = -s // rotate_half(x) = [-x2, x1]: the minus sits in the table
      sin[p * hd + half + j] = s
    }
  }
  // x @ rot = [x2, x1]
  const rot = new Float32Array(hd * hd)
  for (let j = 0; j < half; j++) {
    rot[(half + j) * hd + j] = 1
    rot[j * hd + half + j] = 1
  }
  return { cos, sin, rot }
}

/** Options of `createTransformer`. */
export interface CreateTransformerOptions {
  /** Seed of `initWeights` (and of `initAdapters` under LoRA); default 0. */
  seed?: number
  /** Initial weights by name (see `paramShapes`); default `initWeights(config, seed)`. */
  weights?: Record<string, Float32Array>
  /**
   * LoRA adapters on the projections (`lora.ts`): the weights are then frozen and only the
   * adapters are parameters. Default: none (full fine-tuning).
   */
  lora?: LoraConfig
  /** Initial adapters by name (see `adapterShapes`); default `initAdapters(config, lora, seed)`. */
  adapters?: Record<string, Float32Array>
  /** Under LoRA: the directory the weights came from (`LoraState.base`). */
  base?: string
}

/** Variables from plain arrays, checked against their shapes; frees what it made on an error. */
function variablesOf(
  shapes: [string, number[]][],
  data: Readonly<Record<string, Float32Array>>,
  trainable: boolean,
): Map<string, tf.Variable> {
  const out = new Map<string, tf.Variable>()
  for (const [name, shape] of shapes) {
    const values = data[name]
    const size = shape.reduce((a, b) => a * b, 1)
    if (!values || values.length !== size) {
      for (const p of out.values()) p.dispose()
      throw new ShapeError(name, `${size} float32 values for [${shape.join(', ')}]`, [values?.length ?? 0])
    }
    const initial = tf.tensor(values, shape, 'float32')
    out.set(name, tf.variable(initial, trainable, undefined, 'float32'))
    initial.dispose() // tf.variable copies its initial value: without this every model took twice its size
  }
  return out
}

function loraState(config: FullLoraConfig, seed: number, base: string | undefined): LoraState {
  return { config, scale: loraScale(config), dropoutSeed: undefined, draws: 0, seed, base }
}

/**
 * A model from a config and a seed (or given weights), optionally with LoRA adapters.
 * @throws ConfigError on a bad config or LoRA setting; ShapeError when a given weight or adapter
 *   has the wrong size.
 */
export function createTransformer(
  config: TransformerConfig,
  options: CreateTransformerOptions = {},
): Transformer {
  const full = fullConfig(config)
  const lora = options.lora ? fullLoraConfig(options.lora) : undefined
  const seed = options.seed ?? 0
  const weights = options.weights ?? initWeights(full, seed)
  const adapters = lora ? (options.adapters ?? initAdapters(full, lora, seed)) : undefined
  const base = variablesOf(paramShapes(full), weights, !lora)
  let params = base
  if (lora && adapters) {
    try {
      params = variablesOf(adapterShapes(full, lora), adapters, true)
    } catch (err) {
      for (const p of base.values()) p.dispose()
      throw err
    }
  }
  const hd = full.headDim
  const { cos, sin, rot } = ropeTables(full)
  return {
    config: full,
    params,
    frozen: lora ? base : new Map(),
    ...(lora ? { lora: loraState(lora, seed, options.base) } : {}),
    ropeCos: tf.tensor2d(cos, [full.contextLength, hd]),
    ropeSin: tf.tensor2d(sin, [full.contextLength, hd]),
    rotateHalf: tf.tensor2d(rot, [hd, hd]),
  }
}

/**
 * A model that uses `base`'s weights, frozen and shared (not copied), with its own LoRA adapters:
 * how a policy engine takes a new adapter version without a second copy of the base. Freeing it
 * (`disposeTransformer`) frees the adapters alone; `base` must outlive it.
 * @param base a model without adapters (its parameters become the frozen weights) or with them
 *   (its frozen weights are shared, its adapters not).
 * @param lora default `base.lora.config`.
 * @param options.seed dropout seed base, options.base the weights' directory (default `base`'s).
 * @throws ConfigError without LoRA settings or on a bad one; ShapeError on a misshapen adapter.
 */
export function withAdapters(
  base: Transformer,
  adapters: Record<string, Float32Array>,
  lora: LoraConfig | undefined = base.lora?.config,
  options: { seed?: number; base?: string } = {},
): Transformer {
  if (!lora) throw new ConfigError('lora', lora, 'withAdapters needs LoRA settings')
  const full = fullLoraConfig(lora)
  const model: Transformer = {
    config: base.config,
    params: variablesOf(adapterShapes(base.config, full), adapters, true),
    frozen: base.lora ? base.frozen : base.params,
    lora: loraState(full, options.seed ?? base.lora?.seed ?? 0, options.base ?? base.lora?.base),
    ropeCos: base.ropeCos,
    ropeSin: base.ropeSin,
    rotateHalf: base.rotateHalf,
  }
  borrowed.add(model)
  return model
}

/** Frees every tensor of a model. */
export function disposeTransformer(model: Transformer): void {
  for (const p of model.params.values()) p.dispose()
  if (borrowed.has(model)) return
  for (const p of model.frozen.values()) p.dispose()
  model.ropeCos.dispose()
  model.ropeSin.dispose()
  model.rotateHalf.dispose()
}

/**
 * Embedding lookup whose gradient is a scatter-add of the output gradient's rows into the rows of
 * the looked-up ids, `dE = unsortedSegmentSum(dY, ids, vocab)`: O(n x width) work and memory, where
 * a one-hot matmul `onehot(ids)^T dY` costs O(n x vocab x width). The wasm backend lacks the kernel;
 * `segment-sum-kernel.ts` registers one.
 * @param ids `[n]` int32. @returns `[n, width]`.
 */
function embedLookup(embed: tf.Variable, ids: tf.Tensor1D): tf.Tensor2D {
  const vocab = embed.shape[0]!
  type GradFn = (
    e: tf.Tensor,
    i: tf.Tensor,
    save: tf.GradSaveFunc,
  ) => {
    value: tf.Tensor
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[]
  }
  const lookup: GradFn = (e, i, save) => {
    save([i])
    return {
      value: tf.gather(e, i as tf.Tensor1D),
      gradFunc: (dy, saved) => [
        tf.unsortedSegmentSum(dy as tf.Tensor2D, saved[0] as tf.Tensor1D, vocab), // dE[v] = sum of dY rows with id v
        tf.zerosLike(saved[0]!),
      ],
    }
  }
  const f = tf.customGrad(lookup as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact
  return f(embed, ids) as tf.Tensor2D
}

/** Inputs of one forward pass beyond the tokens (all built by the caller, inside its tidy). */
interface ForwardContext {
  batch: number
  /** New tokens per sequence in this pass. */
  steps: number
  /** Rotary cos, sin `[batch*steps, 1, headDim]`. */
  cos: tf.Tensor3D
  sin: tf.Tensor3D
  /** Additive attention mask `[batch or 1, 1, steps, keyLen]`: 0 allowed, -1e9 blocked. */
  mask: tf.Tensor4D
  cache?: KvCache
  attention: AttentionMode
}

/** Rotary positions on `[n, heads, hd]` (RoFormer eq. 34, rotate-half form). */
function rope(model: Transformer, x: tf.Tensor3D, ctx: ForwardContext): tf.Tensor3D {
  return fusedRope(x, ctx.cos, ctx.sin, model.rotateHalf) // x*cos + rotate_half(x)*sin
}

/** `[b*t, h*hd]` -> `[b*h, t, hd]`. */
function toHeads(x: tf.Tensor, b: number, t: number, h: number, hd: number): tf.Tensor3D {
  return tf.reshape(tf.transpose(tf.reshape(x, [b, t, h, hd]), [0, 2, 1, 3]), [b * h, t, hd])
}

/**
 * `x` split into `n` equal parts along axis 0. One part is `x` itself: tfjs's gradient of a split
 * into one part fails ("Pass at least one tensor to concat"), which a single sequence-head (batch 1,
 * one key/value head) would otherwise meet.
 */
function splitRows<T extends tf.Tensor>(x: T, n: number): T[] {
  return n === 1 ? [x] : (tf.split(x, n, 0) as T[])
}

/**
 * How attention multiplies: `batched` uses one 3-D matmul for all heads; `per-head` one 2-D matmul
 * per sequence and head (on wasm about a third faster for long blocks, since batched and transposed
 * matmuls leave XNNPACK's fast path, but it costs a split per head); `auto` takes `per-head` on wasm for
 * blocks of at least 64 queries with at most 64 sequence-heads, else `batched`.
 */
export const AttentionMode = { Auto: 'auto', Batched: 'batched', PerHead: 'per-head' } as const
export type AttentionMode = (typeof AttentionMode)[keyof typeof AttentionMode]

/**
 * Scaled dot-product attention `softmax(q k^T + mask) v` (Vaswani et al. 2017, eq. 1; the
 * `1/sqrt(d_k)` is already in q), grouped-query: query head `j` reads key/value head
 * `floor(j / (heads / kvHeads))` (Ainslie et al. 2023). q `[b*heads, t, hd]`, k and v `[b*kvHeads,
 * keyLen, hd]`, mask `[b or 1, 1, t, keyLen]`; returns `[b*heads, t, hd]`. The g = heads / kvHeads
 * query heads of a group are stacked along the query axis (`[b*kvHeads, g*t, hd]`), so keys and
 * values are never repeated.
 */
function attention(
  q: tf.Tensor3D,
  k: tf.Tensor3D,
  v: tf.Tensor3D,
  mask: tf.Tensor4D,
  heads: number,
  mode: AttentionMode,
): tf.Tensor3D {
  const [bh, t, hd] = q.shape
  const bkv = k.shape[0]
  const g = bh / bkv // query heads per key/value head
  const keyLen = k.shape[1]
  const maskBatch = mask.shape[0]
  const qg = tf.reshape(q, [bkv, g * t, hd]) as tf.Tensor3D
  const fused = fusedAttention(qg, k, v, mask, bkv / (bh / heads))
  if (fused) return tf.reshape(fused, [bh, t, hd])
  // per-head pays on wasm only (its batched and transposed matmuls leave XNNPACK's fast path)
  const perHead =
    mode === AttentionMode.PerHead ||
    (mode === AttentionMode.Auto && !transposeFlagsAreFast() && t >= 64 && bkv <= 64)
  if (!perHead) {
    const scores = tf.matMul(qg, k, false, true) as tf.Tensor3D // [b*kv, g*t, keyLen]
    return tf.reshape(tf.matMul(maskedSoftmax(scores, mask, bh / heads, heads), v), [bh, t, hd])
  }
  const kvHeads = bkv / (bh / heads)
  const qs = splitRows(qg, bkv)
  const kts = splitRows(tf.transpose(k, [0, 2, 1]), bkv)
  const vs = splitRows(v, bkv)
  const masks =
    maskBatch === 1
      ? [tf.reshape(mask, [t, keyLen])]
      : splitRows(tf.reshape(mask, [maskBatch, t * keyLen]), maskBatch)
  const outs = qs.map((qi, i) => {
    const m = tf.reshape(masks[maskBatch === 1 ? 0 : Math.floor(i / kvHeads)]!, [t, keyLen])
    const raw = matmul(tf.reshape(qi, [g * t, hd]), tf.reshape(kts[i]!, [hd, keyLen])) // q k^T
    const scores =
      g === 1 ? tf.add(raw, m) : tf.reshape(tf.add(tf.reshape(raw, [g, t, keyLen]), m), [g * t, keyLen])
    return tf.reshape(matmul(tf.softmax(scores) as tf.Tensor2D, tf.reshape(vs[i]!, [keyLen, hd])), [
      1,
      g * t,
      hd,
    ])
  })
  return tf.reshape(tf.concat(outs, 0), [bh, t, hd])
}

function block(model: Transformer, i: number, x: tf.Tensor2D, ctx: ForwardContext): tf.Tensor2D {
  const { heads: h, kvHeads: kv, headDim: hd, normEps, mlpHidden: f } = model.config
  const p = (name: string) => weightOf(model, `layers.${i}.${name}`)
  // x W; a frozen W (LoRA) gets no gradient of its own
  const wx = (input: tf.Tensor2D, name: string) =>
    model.frozen.has(`layers.${i}.${name}`)
      ? matmulFrozen(input, p(name) as tf.Tensor2D)
      : matmul(input, p(name) as tf.Tensor2D)
  const n = x.shape[0]
  const { batch: b, steps: t } = ctx
  const lora = (target: LoraTarget, input: tf.Tensor2D, y: tf.Tensor2D) =>
    withLora(model, i, target, input, y)

  // Attention: x + W_o softmax(q k^T / sqrt(hd) + mask) v
  const a = rmsNorm(x, p('attn_norm'), normEps)
  let qkv = wx(a, 'qkv')
  if (model.config.qkvBias) qkv = tf.add(qkv, p('qkv_bias')) as tf.Tensor2D // Qwen2: x W + b
  let [q2, k2, v2] = tf.split(qkv, [h * hd, kv * hd, kv * hd], 1) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D]
  if (model.lora) {
    q2 = lora(LoraTarget.Query, a, q2)
    k2 = lora(LoraTarget.Key, a, k2)
    v2 = lora(LoraTarget.Value, a, v2)
  }
  let q3 = tf.reshape(q2, [n, h, hd]) as tf.Tensor3D
  let k3 = tf.reshape(k2, [n, kv, hd]) as tf.Tensor3D
  if (model.config.qkNorm) {
    // Qwen3: RMSNorm over each head's vector, before the rotation
    q3 = rmsNorm(q3, p('q_norm'), normEps)
    k3 = rmsNorm(k3, p('k_norm'), normEps)
  }
  const q = rope(model, tf.mul(q3, 1 / Math.sqrt(hd)), ctx) // 1/sqrt(d_k) folded into q
  const kNew = toHeads(rope(model, k3, ctx), b, t, kv, hd)
  const vNew = toHeads(v2, b, t, kv, hd)
  const [k, v] = ctx.cache ? ctx.cache.append(i, kNew, vNew) : [kNew, vNew]
  const attn = attention(toHeads(q, b, t, h, hd), k, v, ctx.mask, h, ctx.attention) // [b*h, t, hd]
  const merged = tf.reshape(tf.transpose(tf.reshape(attn, [b, h, t, hd]), [0, 2, 1, 3]), [n, h * hd])
  const attnIn = merged as tf.Tensor2D
  const o = lora(LoraTarget.Output, attnIn, wx(attnIn, 'attn_out'))
  const x1 = tf.add(x, o) as tf.Tensor2D

  // Gated MLP: x + W_down (silu(x W_gate) * x W_up)   (Shazeer 2020, eq. 6)
  const m = rmsNorm(x1, p('mlp_norm'), normEps)
  const gu = wx(m, 'gate_up')
  let [gate, up] = tf.split(gu, [f, f], 1) as [tf.Tensor2D, tf.Tensor2D]
  if (model.lora) {
    gate = lora(LoraTarget.Gate, m, gate)
    up = lora(LoraTarget.Up, m, up)
  }
  const hidden = swiglu(gate, up) // silu(g) * u
  return tf.add(x1, lora(LoraTarget.Down, hidden, wx(hidden, 'down'))) as tf.Tensor2D
}

/** Position of each target in the dropout seed of a layer. */
const TARGET_INDEX: Readonly<Record<LoraTarget, number>> = {
  q_proj: 0,
  k_proj: 1,
  v_proj: 2,
  o_proj: 3,
  gate_proj: 4,
  up_proj: 5,
  down_proj: 6,
}

/**
 * A projection's output `y = x W` plus its adapter's update when `target` has one:
 * `y + (alpha / rank) (dropout(x) A) B` (Hu et al. 2021, eq. 3, in triad's `x W` orientation; the
 * dropout on the adapter's input as in PEFT, only while `lossAndGrads` takes gradients).
 * @param x `[n, in]`; `y` `[n, out]`; returns `[n, out]`.
 */
function withLora(model: Transformer, layer: number, target: LoraTarget, x: tf.Tensor2D, y: tf.Tensor2D) {
  const lora = model.lora
  if (!lora) return y
  const a = model.params.get(adapterName(layer, target, 'a'))
  if (!a) return y
  const b = model.params.get(adapterName(layer, target, 'b'))! as tf.Tensor2D
  const p = lora.config.dropout
  const input =
    lora.dropoutSeed !== undefined && p > 0
      ? (tf.dropout(
          x,
          p,
          undefined,
          lora.dropoutSeed * 131 + layer * 7 + TARGET_INDEX[target],
        ) as tf.Tensor2D)
      : x
  return loraUpdate(y, input, a as tf.Tensor2D, b, lora.scale) // x W + (alpha / r) x A B
}

/** Options of `forward`. */
export interface ForwardOptions {
  /**
   * Position of each token `[batch, seqLen]` int32; default `0..seqLen-1` in every row (with a
   * cache: continuing after the cached tokens).
   */
  positions?: tf.Tensor2D
  /**
   * Which tokens are real `[batch, seqLen]` (1) or padding (0) that no query may attend to; default
   * all real. Needed for left-padded batches; right padding needs none (causality hides it).
   */
  attentionMask?: tf.Tensor2D
  /** A KV cache to read and extend (see `kv-cache.ts`); the tokens follow the cached ones. */
  cache?: KvCache
  /** Return only the last position's logits, `[batch, vocabSize]`. */
  lastOnly?: boolean
  /** How attention multiplies; default `auto` (same values either way, up to rounding). */
  attention?: AttentionMode
}

/**
 * Causal additive mask `[1, 1, t, keys]`: query i sees keys j <= cached + i; the keys past
 * `cached + t` (a KV cache's free columns, `KvCache.keyLength`) are blocked for every query.
 */
function causalMask(t: number, cached: number, keys: number): tf.Tensor4D {
  const data = new Float32Array(t * keys)
  for (let i = 0; i < t; i++) for (let j = cached + i + 1; j < keys; j++) data[i * keys + j] = -1e9
  return tf.tensor4d(data, [1, 1, t, keys])
}

/**
 * Final hidden states `[batch*seqLen, width]` (after the final norm), or `[batch, width]` with
 * `lastOnly`. Callers wrap it in `tf.tidy`.
 */
export function hiddenStates(
  model: Transformer,
  tokens: tf.Tensor2D,
  options: ForwardOptions = {},
): tf.Tensor2D {
  const { contextLength, width, normEps } = model.config
  if (tokens.rank !== 2) throw new ShapeError('tokens', '[batch, seqLen]', tokens.shape)
  const [b, t] = tokens.shape
  const cache = options.cache
  const cached = cache?.length ?? 0
  if (cached + t > contextLength)
    throw new ShapeError(
      'tokens',
      `at most ${contextLength - cached} positions (contextLength)`,
      tokens.shape,
    )
  if (cache && cache.batch !== b)
    throw new ShapeError('tokens', `batch ${cache.batch} (the cache's)`, tokens.shape)
  const hd = model.config.headDim
  const flatIds = tf.reshape(tokens.toInt(), [b * t]) as tf.Tensor1D
  const positions =
    options.positions ?? tf.tile(tf.reshape(tf.range(cached, cached + t, 1, 'int32'), [1, t]), [b, 1])
  if (options.positions && (positions.shape[0] !== b || positions.shape[1] !== t))
    throw new ShapeError('positions', `[${b}, ${t}]`, positions.shape)
  const flatPos = tf.reshape(positions.toInt(), [b * t]) as tf.Tensor1D
  const cos = tf.reshape(tf.gather(model.ropeCos, flatPos), [b * t, 1, hd]) as tf.Tensor3D
  const sin = tf.reshape(tf.gather(model.ropeSin, flatPos), [b * t, 1, hd]) as tf.Tensor3D
  const keys = cache ? cache.keyLength(t) : t
  let mask: tf.Tensor4D = causalMask(t, cached, keys)
  const keyMask = cache ? cache.extendKeyMask(options.attentionMask, t) : options.attentionMask
  if (keyMask) {
    if (keyMask.shape[0] !== b || keyMask.shape[1] !== cached + t)
      throw new ShapeError('attentionMask', `[${b}, ${cached + t}]`, keyMask.shape)
    // blocked keys get -1e9: (mask - 1) * 1e9; a cache's free columns are blocked by the causal mask
    const blocked = tf.mul(tf.sub(keyMask.toFloat(), 1), 1e9)
    const free = keys - (cached + t)
    const pad = tf.reshape(
      free > 0
        ? tf.pad(blocked, [
            [0, 0],
            [0, free],
          ])
        : blocked,
      [b, 1, 1, keys],
    )
    mask = tf.add(mask, pad) as tf.Tensor4D
  }
  const ctx: ForwardContext = {
    batch: b,
    steps: t,
    cos,
    sin,
    mask,
    cache,
    attention: options.attention ?? AttentionMode.Auto,
  }
  let x = embedLookup(weightOf(model, 'embed'), flatIds)
  // one tidy per block: a block's intermediates that its backward pass does not need (the tape
  // keeps what it saved) are freed before the next block, so the forward holds one block's worth
  for (let i = 0; i < model.config.layers; i++) {
    const input = x
    x = tf.tidy(() => block(model, i, input, ctx))
  }
  if (cache) cache.advance(t)
  if (options.lastOnly)
    x = tf.reshape(tf.slice(tf.reshape(x, [b, t, width]), [0, t - 1, 0], [b, 1, width]), [b, width])
  return rmsNorm(x, weightOf(model, 'final_norm'), normEps)
}

/**
 * Logits `[batch, seqLen, vocabSize]` float32 of the next token at every position (or
 * `[batch, vocabSize]` with `lastOnly`), from tokens `[batch, seqLen]` int32.
 * @throws ShapeError when tokens do not fit the context or the cache.
 */
export function forward(model: Transformer, tokens: tf.Tensor2D, options: ForwardOptions = {}): tf.Tensor {
  return tf.tidy(() => {
    const [b, t] = tokens.shape
    const h = hiddenStates(model, tokens, options)
    const logits = projectOut(model, h) // h W^T, W = E when tied
    return options.lastOnly ? logits : tf.reshape(logits, [b, t, model.config.vocabSize])
  })
}

/** Options of `tokenLogprobs`. */
export interface LogprobOptions {
  /** Divide logits by this before the softmax (match the sampler's temperature); default 1. */
  temperature?: number
  /** As in `forward`. */
  attentionMask?: tf.Tensor2D
  /** As in `forward`. */
  positions?: tf.Tensor2D
  /** As in `forward`. */
  attention?: AttentionMode
}

/**
 * Log-probabilities of given next tokens: `out[b, i] = log softmax(logits[b, i] / T)[targets[b, i]]`.
 * Differentiable (the learner's `logp_theta`); works on wasm (one-hot, no gather gradient).
 * @param tokens `[batch, seqLen]` int32 inputs.
 * @param targets `[batch, seqLen]` int32, usually the inputs shifted left by one.
 * @returns `[batch, seqLen]` float32.
 */
export function tokenLogprobs(
  model: Transformer,
  tokens: tf.Tensor2D,
  targets: tf.Tensor2D,
  options: LogprobOptions = {},
): tf.Tensor2D {
  if (targets.rank !== 2 || targets.shape[0] !== tokens.shape[0] || targets.shape[1] !== tokens.shape[1])
    throw new ShapeError('targets', `[${tokens.shape.join(', ')}] like tokens`, targets.shape)
  const temperature = options.temperature ?? 1
  if (!(temperature > 0))
    throw new ConfigError('temperature', temperature, 'must be > 0 for log-probabilities')
  return tf.tidy(() => {
    const [b, t] = tokens.shape
    const h = hiddenStates(model, tokens, {
      attentionMask: options.attentionMask,
      positions: options.positions,
    })
    let logits: tf.Tensor2D = projectOut(model, h) // h W^T, [b*t, V]
    if (temperature !== 1) logits = tf.div(logits, temperature)
    const picked = tokenLogprob(logits, tf.reshape(targets.toInt(), [b * t]) as tf.Tensor1D) // z_y - logsumexp(z)
    return tf.reshape(picked, [b, t])
  })
}

/**
 * Log-probabilities (and, with `options.entropy`, entropies) of given next tokens at chosen positions
 * only: `logp[r] = log softmax(logits[r] / T)[targets[r]]` for each flat position `r = b * seqLen + i`
 * in `positions`, 0 at every other position. The output head and the softmax, which dominate a pass
 * for a large vocabulary (151,936 ids: 0.6 MB of logits per position), run on those rows alone; the
 * transformer body runs on every position (attention needs them). Differentiable: the chosen hidden
 * states are gathered and the results scattered back (`unsortedSegmentSum`), so positions outside
 * `positions` get no gradient, as a loss mask of 0 gives them none.
 * @param tokens `[batch, seqLen]` int32 inputs.
 * @param targets `[batch, seqLen]` int32, usually the inputs shifted left by one.
 * @param positions distinct flat positions in `[0, batch * seqLen)`, int32 (may be empty).
 * @param options.entropyGradient the entropy takes a gradient (a loss with an entropy bonus);
 *   without it the entropy is a value alone (`tokenEntropy`: one kernel, nothing saved for a backward
 *   pass), and a loss that depends on it fails in the backward pass on the native engine.
 * @returns `logp` `[batch, seqLen]` float32 (nats); `entropy` `[batch, seqLen]` float32 (nats) with
 *   `options.entropy`.
 * @throws ShapeError for targets unlike tokens or a position out of range; ConfigError for a
 *   temperature that is not > 0.
 */
export function tokenStatsAt(
  model: Transformer,
  tokens: tf.Tensor2D,
  targets: tf.Tensor2D,
  positions: Int32Array,
  options: LogprobOptions & { entropy?: boolean; entropyGradient?: boolean } = {},
): { logp: tf.Tensor2D; entropy?: tf.Tensor2D } {
  if (targets.rank !== 2 || targets.shape[0] !== tokens.shape[0] || targets.shape[1] !== tokens.shape[1])
    throw new ShapeError('targets', `[${tokens.shape.join(', ')}] like tokens`, targets.shape)
  const temperature = options.temperature ?? 1
  if (!(temperature > 0))
    throw new ConfigError('temperature', temperature, 'must be > 0 for log-probabilities')
  const [b, t] = tokens.shape
  for (const r of positions)
    if (!(r >= 0 && r < b * t)) throw new ShapeError('positions', `in [0, ${b * t})`, [r])
  return tf.tidy(() => {
    if (positions.length === 0) {
      const zeros = tf.zeros([b, t]) as tf.Tensor2D
      return options.entropy ? { logp: zeros, entropy: tf.zeros([b, t]) as tf.Tensor2D } : { logp: zeros }
    }
    const h = hiddenStates(model, tokens, {
      attentionMask: options.attentionMask,
      positions: options.positions,
      attention: options.attention,
    })
    const rows = tf.tensor1d(positions, 'int32')
    let logits: tf.Tensor2D = projectOut(model, tf.gather(h, rows)) // [n, V]
    if (temperature !== 1) logits = tf.div(logits, temperature)
    const wanted = tf.gather(tf.reshape(targets.toInt(), [b * t]), rows) as tf.Tensor1D
    const picked = tokenLogprob(logits, wanted) // log p = z_y - logsumexp(z)
    const logp = tf.reshape(tf.unsortedSegmentSum(picked, rows, b * t), [b, t]) as tf.Tensor2D
    if (!options.entropy) return { logp }
    const h1 = tokenEntropy(logits, { differentiable: options.entropyGradient === true }) // H = -sum p log p, [n]
    const entropy = tf.reshape(tf.unsortedSegmentSum(h1, rows, b * t), [b, t]) as tf.Tensor2D
    return { logp, entropy }
  })
}

/**
 * Output heads at least this large (vocabSize x width values; 64 MiB of float32) take the
 * transpose-flag matmul for a few rows, see `projectOut`.
 */
const LARGE_HEAD_VALUES = 2 ** 24

/**
 * Logits `h W^T` `[rows, vocabSize]` from hidden states `[rows, width]`. Normally an explicit
 * transpose and a plain matmul (the fast path on wasm, see `matmul.ts`). For a large head and at
 * most 8 rows (decoding), the transpose costs more than the product (at 151,936 x 896 on wasm
 * 1.4 s of a 1.8 s step for one row), so the matmul with the transpose flag runs instead (0.17 s);
 * triad's own small vocabularies never take that path.
 */
function projectOut(model: Transformer, h: tf.Tensor2D): tf.Tensor2D {
  const w = outputWeight(model)
  const flagRows = w.size >= LARGE_HEAD_VALUES ? 8 : 0
  // a frozen head (LoRA): no [width, vocab] gradient and transpose in the backward pass
  if (model.frozen.has(model.config.tiedEmbeddings ? 'embed' : 'lm_head'))
    return matmulTFrozen(h, w, flagRows)
  if (h.shape[0] <= flagRows) return tf.matMul(h, w, false, true)
  return matmulT(h, w)
}

/** The output projection `[vocabSize, width]`: `lm_head` when untied, else the embedding. */
export function outputWeight(model: Transformer): tf.Tensor2D {
  return weightOf(model, model.config.tiedEmbeddings ? 'embed' : 'lm_head') as tf.Tensor2D
}

/**
 * Model FLOPs of training on one token (forward and backward) at sequence length `seqLen`:
 * `6 N + 12 layers width seqLen`, with N the parameter count (PaLM, Chowdhery et al. 2022,
 * appendix B; the attention term counts the full, non-causal score matrix as PaLM does).
 */
export function trainingFlopsPerToken(config: TransformerConfig, seqLen: number): number {
  const c = fullConfig(config)
  return 6 * parameterCount(c) + 12 * c.layers * c.heads * c.headDim * seqLen // 6N + 12 L H Q T
}
