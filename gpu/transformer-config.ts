import { ConfigError } from './errors.ts'

/*
 * The size of a decoder-only transformer (`transformer.ts`), with its defaults: the config that
 * `lora.ts`, `hf-config.ts` and the checkpoints read without the model's code.
 */

/** Size of a transformer. */
export interface TransformerConfig {
  /** Number of blocks. */
  layers: number
  /** Model width (embedding size); a multiple of `heads`, with an even head size. */
  width: number
  /** Attention heads. */
  heads: number
  /** Longest sequence, in tokens (size of the rotary table; the sampler's limit). */
  contextLength: number
  /** Number of token ids (the tokenizer's `vocabSize`). */
  vocabSize: number
  /** Hidden size of the gated MLP; default `8/3 * width` rounded up to a multiple of 64. */
  mlpHidden?: number
  /** Rotary base; default 10000. */
  ropeTheta?: number
  /** RMSNorm epsilon; default 1e-5. */
  normEps?: number
  /** Key/value heads (grouped-query attention); divides `heads`; default `heads`. */
  kvHeads?: number
  /** Size of one attention head; even; default `width / heads`. */
  headDim?: number
  /** Biases on the q, k and v projections (Qwen2); default false. */
  qkvBias?: boolean
  /** Per-head RMSNorm of queries and keys before the rotation (Qwen3); default false. */
  qkNorm?: boolean
  /** Output projection is the embedding (`h E^T`); false adds `lm_head` `[vocabSize, width]`; default true. */
  tiedEmbeddings?: boolean
  /** Rotary frequency scaling; default `{type: 'none'}`. */
  ropeScaling?: RopeScaling
}

/** Kinds of rotary frequency scaling. */
export const RopeScalingType = { None: 'none', Linear: 'linear', Llama3: 'llama3' } as const
export type RopeScalingType = (typeof RopeScalingType)[keyof typeof RopeScalingType]

/**
 * Rotary frequency scaling: `none`; `linear` (position interpolation, Chen et al. 2023: every
 * frequency divided by `factor`); `llama3` (Llama 3.1: wavelengths above `originalContextLength /
 * lowFreqFactor` divided by `factor`, below `originalContextLength / highFreqFactor` kept, and a
 * linear blend between, in `original / wavelength`).
 */
export type RopeScaling =
  | { type: 'none' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3'
      factor: number
      lowFreqFactor: number
      highFreqFactor: number
      /** Context the model was pretrained at, in tokens (`original_max_position_embeddings`). */
      originalContextLength: number
    }

/** A config with every default filled in (what `config.json` stores). */
export type FullTransformerConfig = Required<TransformerConfig>

/** Fills in the defaults and checks a config. @throws ConfigError on a bad size. */
export function fullConfig(config: TransformerConfig): FullTransformerConfig {
  const positiveInt = (field: string, v: unknown) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new ConfigError(field, v, 'must be a positive integer')
  }
  for (const field of ['layers', 'width', 'heads', 'contextLength', 'vocabSize'] as const)
    positiveInt(field, config[field])
  if (config.headDim === undefined && config.width % config.heads !== 0)
    throw new ConfigError('width', config.width, 'must be a multiple of heads')
  const headDim = config.headDim ?? config.width / config.heads
  positiveInt('headDim', headDim)
  if (headDim % 2 !== 0)
    throw config.headDim === undefined
      ? new ConfigError(
          'heads',
          config.heads,
          'width / heads (the head size) must be even for rotary positions',
        )
      : new ConfigError('headDim', config.headDim, 'must be even for rotary positions')
  const kvHeads = config.kvHeads ?? config.heads
  positiveInt('kvHeads', kvHeads)
  if (config.heads % kvHeads !== 0)
    throw new ConfigError('kvHeads', kvHeads, `must divide heads (${config.heads})`)
  const mlpHidden = config.mlpHidden ?? Math.ceil((8 * config.width) / 3 / 64) * 64
  positiveInt('mlpHidden', mlpHidden)
  const ropeTheta = config.ropeTheta ?? 10000
  if (!(ropeTheta > 1)) throw new ConfigError('ropeTheta', ropeTheta, 'must be > 1')
  const normEps = config.normEps ?? 1e-5
  if (!(normEps > 0)) throw new ConfigError('normEps', normEps, 'must be > 0')
  const ropeScaling = checkRopeScaling(config.ropeScaling ?? { type: RopeScalingType.None })
  return {
    layers: config.layers,
    width: config.width,
    heads: config.heads,
    contextLength: config.contextLength,
    vocabSize: config.vocabSize,
    mlpHidden,
    ropeTheta,
    normEps,
    kvHeads,
    headDim,
    qkvBias: config.qkvBias ?? false,
    qkNorm: config.qkNorm ?? false,
    tiedEmbeddings: config.tiedEmbeddings ?? true,
    ropeScaling,
  }
}

function checkRopeScaling(scaling: RopeScaling): RopeScaling {
  const positive = (field: string, v: unknown) => {
    if (typeof v !== 'number' || !(v > 0))
      throw new ConfigError(`ropeScaling.${field}`, v, 'must be a number > 0')
  }
  switch (scaling.type) {
    case RopeScalingType.None:
      return { type: RopeScalingType.None }
    case RopeScalingType.Linear:
      positive('factor', scaling.factor)
      return { type: RopeScalingType.Linear, factor: scaling.factor }
    case RopeScalingType.Llama3: {
      for (const f of ['factor', 'lowFreqFactor', 'highFreqFactor', 'originalContextLength'] as const)
        positive(f, scaling[f])
      if (!(scaling.highFreqFactor > scaling.lowFreqFactor))
        throw new ConfigError(
          'ropeScaling.highFreqFactor',
          scaling.highFreqFactor,
          'must exceed lowFreqFactor',
        )
      const { factor, lowFreqFactor, highFreqFactor, originalContextLength } = scaling
      return { type: RopeScalingType.Llama3, factor, lowFreqFactor, highFreqFactor, originalContextLength }
    }
    default:
      throw new ConfigError(
        'ropeScaling.type',
        (scaling as { type: unknown }).type,
        `must be one of ${Object.values(RopeScalingType).join(', ')}`,
      )
  }
}
