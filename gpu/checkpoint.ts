import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { CheckpointError } from './errors.ts'
import { readJsonFile } from './json-file.ts'
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from './safetensors.ts'
import type { Tokenizer } from './tokenizer.ts'
import { loadTokenizer, tokenizerJson } from './tokenizer-file.ts'
import {
  createTransformer,
  type FullTransformerConfig,
  fullConfig,
  paramShapes,
  type Transformer,
} from './transformer.ts'
import { getWeights } from './weights.ts'

/**
 * Checkpoints: a directory with `model.safetensors` (every parameter, float32, named as in
 * `paramShapes`), `config.json` (the full transformer config) and `tokenizer.json` (the tokenizer
 * settings). Plain arrays in between, so a checkpoint saved under one backend loads under any other.
 */

/** File names inside a checkpoint directory. */
export const CheckpointFile = {
  Weights: 'model.safetensors',
  Config: 'config.json',
  Tokenizer: 'tokenizer.json',
} as const
export type CheckpointFile = (typeof CheckpointFile)[keyof typeof CheckpointFile]

/** `config.json`: the transformer config plus what produced it. */
export interface CheckpointConfig extends FullTransformerConfig {
  /** Always `triad-decoder`. */
  architecture: 'triad-decoder'
}

async function writeAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`
  await writeFile(tmp, data)
  await rename(tmp, file)
}

/**
 * Writes a checkpoint directory (created if missing; files replaced atomically one by one).
 * @param metadata strings stored in the safetensors header (`__metadata__`), for example the step.
 */
export async function saveCheckpoint(
  dir: string,
  model: Transformer,
  options: { tokenizer: Tokenizer; metadata?: Record<string, string> },
): Promise<void> {
  await mkdir(dir, { recursive: true })
  const weights = await getWeights(model)
  const tensors: Record<string, NamedTensor> = {}
  for (const [name, shape] of paramShapes(model.config)) tensors[name] = { shape, data: weights[name]! }
  const config: CheckpointConfig = { architecture: 'triad-decoder', ...model.config }
  await writeAtomic(
    path.join(dir, CheckpointFile.Weights),
    encodeSafetensors(tensors, { format: 'pt', ...options.metadata }),
  )
  await writeAtomic(path.join(dir, CheckpointFile.Config), `${JSON.stringify(config, null, 2)}\n`)
  await writeAtomic(path.join(dir, CheckpointFile.Tokenizer), tokenizerJson(options.tokenizer))
}

/** A loaded checkpoint. */
export interface LoadedCheckpoint {
  model: Transformer
  tokenizer: Tokenizer
  /** The safetensors `__metadata__`. */
  metadata: Record<string, string>
}

/** Reads a checkpoint's weights as plain arrays, checked against its config. */
export async function readCheckpointWeights(dir: string): Promise<{
  config: FullTransformerConfig
  weights: Record<string, Float32Array>
  metadata: Record<string, string>
}> {
  const configFile = path.join(dir, CheckpointFile.Config)
  const raw = (await readJsonFile(configFile)) as Partial<CheckpointConfig>
  if (raw.architecture !== 'triad-decoder')
    throw new CheckpointError(
      configFile,
      `architecture ${JSON.stringify(raw.architecture)} is not triad-decoder`,
    )
  let config: FullTransformerConfig
  try {
    config = fullConfig(raw as FullTransformerConfig)
  } catch (err) {
    throw new CheckpointError(configFile, (err as Error).message, { cause: err })
  }
  const weightsFile = path.join(dir, CheckpointFile.Weights)
  let bytes: Uint8Array
  try {
    bytes = await readFile(weightsFile)
  } catch (err) {
    throw new CheckpointError(weightsFile, 'cannot read', { cause: err })
  }
  const { tensors, metadata } = decodeSafetensors(bytes, weightsFile)
  const weights: Record<string, Float32Array> = {}
  for (const [name, shape] of paramShapes(config)) {
    const t = tensors[name]
    if (!t) throw new CheckpointError(weightsFile, `missing tensor ${name}`)
    if (t.shape.join(',') !== shape.join(','))
      throw new CheckpointError(weightsFile, `tensor ${name} has shape [${t.shape}], config wants [${shape}]`)
    weights[name] = t.data
  }
  const extra = Object.keys(tensors).filter((n) => !(n in weights))
  if (extra.length) throw new CheckpointError(weightsFile, `unexpected tensors ${extra.join(', ')}`)
  return { config, weights, metadata }
}

/**
 * Loads a checkpoint directory into a new model on the current backend.
 * @throws CheckpointError on a missing or malformed file or weights that do not fit the config.
 */
export async function loadCheckpoint(dir: string): Promise<LoadedCheckpoint> {
  const { config, weights, metadata } = await readCheckpointWeights(dir)
  // The tokenizer with its merges, if any (the model's vocabulary includes them).
  const tokenizer = await loadTokenizer(path.join(dir, CheckpointFile.Tokenizer))
  if (tokenizer.vocabSize !== config.vocabSize)
    throw new CheckpointError(dir, `tokenizer has ${tokenizer.vocabSize} ids, model ${config.vocabSize}`)
  return { model: createTransformer(config, { weights }), tokenizer, metadata }
}
