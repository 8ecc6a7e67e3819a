import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { CheckpointError } from './errors.ts'
import { checkModelFits, isHfModelDir, readHfModelWeights } from './hf-model.ts'
import { readJsonFile } from './json-file.ts'
import {
  type FullLoraConfig,
  fromPeftTensors,
  fullLoraConfig,
  type LoraConfig,
  peftAdapterConfig,
  toPeftTensors,
} from './lora.ts'
import { assertFiniteTensor, decodeSafetensors, encodeSafetensors, type NamedTensor } from './safetensors.ts'
import type { Tokenizer } from './tokenizer.ts'
import { loadTokenizer, tokenizerJson } from './tokenizer-file.ts'
import { createTransformer, disposeTransformer, paramShapes, type Transformer } from './transformer.ts'
import { type FullTransformerConfig, fullConfig } from './transformer-config.ts'
import { getWeights } from './weights.ts'

/**
 * Checkpoints: a directory with `model.safetensors` (every parameter, float32, named as in
 * `paramShapes`), `config.json` (the full transformer config) and `tokenizer.json` (the tokenizer
 * settings). Plain arrays in between, so a checkpoint saved under one backend loads under any other.
 *
 * A model with LoRA adapters is checkpointed without its frozen weights: `adapter_model.safetensors`
 * and `adapter_config.json` in PEFT's layout (`lora.ts`; PEFT and vLLM read them beside the base),
 * and `config.json` with the `lora` settings and the `base` directory the frozen weights are loaded
 * from (a Hugging Face model directory or a triad checkpoint). Its `tokenizer.json` is written when
 * a triad tokenizer is given; a Hugging Face base keeps its own tokenizer files.
 */

/** File names inside a checkpoint directory. */
export const CheckpointFile = {
  Weights: 'model.safetensors',
  Config: 'config.json',
  Tokenizer: 'tokenizer.json',
  /** The adapters of a LoRA model, PEFT's names and layout. */
  Adapters: 'adapter_model.safetensors',
  /** PEFT's adapter settings. */
  AdapterConfig: 'adapter_config.json',
} as const
export type CheckpointFile = (typeof CheckpointFile)[keyof typeof CheckpointFile]

/** `config.json`: the transformer config plus what produced it. */
export interface CheckpointConfig extends FullTransformerConfig {
  /** Always `triad-decoder`. */
  architecture: 'triad-decoder'
  /** LoRA settings when the checkpoint holds adapters instead of weights. */
  lora?: FullLoraConfig
  /** With `lora`: the directory of the frozen weights (absolute path). */
  base?: string
}

async function writeAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`
  await writeFile(tmp, data)
  await rename(tmp, file)
}

/**
 * Writes a checkpoint directory (created if missing; files replaced atomically one by one). A LoRA
 * model writes its adapters alone (see the file's summary).
 * @param options.tokenizer written as `tokenizer.json`; may be left out only for a LoRA model whose
 *   base is a Hugging Face directory (its tokenizer is the base's).
 * @param metadata strings stored in the safetensors header (`__metadata__`), for example the step.
 * @throws CheckpointError for a LoRA model without a recorded `base`, or without a tokenizer on a
 *   triad base.
 */
export async function saveCheckpoint(
  dir: string,
  model: Transformer,
  options: { tokenizer?: Tokenizer; metadata?: Record<string, string> },
): Promise<void> {
  const lora = model.lora
  if (lora && !lora.base)
    throw new CheckpointError(
      dir,
      'a LoRA model needs the directory of its base weights (createTransformer base)',
    )
  if (!options.tokenizer && !(lora?.base && (await isHfModelDir(lora.base))))
    throw new CheckpointError(
      dir,
      'needs a tokenizer (only a LoRA model on a Hugging Face base uses the base one)',
    )
  await mkdir(dir, { recursive: true })
  const weights = await getWeights(model)
  const meta = { format: 'pt', ...options.metadata }
  const config: CheckpointConfig = {
    architecture: 'triad-decoder',
    ...model.config,
    ...(lora ? { lora: lora.config, base: path.resolve(lora.base!) } : {}),
  }
  if (lora) {
    await writeAtomic(
      path.join(dir, CheckpointFile.Adapters),
      encodeSafetensors(toPeftTensors(weights, model.config, lora.config), meta),
    )
    await writeAtomic(
      path.join(dir, CheckpointFile.AdapterConfig),
      `${JSON.stringify(peftAdapterConfig(lora.config, config.base!), null, 2)}\n`,
    )
  } else {
    const tensors: Record<string, NamedTensor> = {}
    for (const [name, shape] of paramShapes(model.config)) tensors[name] = { shape, data: weights[name]! }
    await writeAtomic(path.join(dir, CheckpointFile.Weights), encodeSafetensors(tensors, meta))
  }
  await writeAtomic(path.join(dir, CheckpointFile.Config), `${JSON.stringify(config, null, 2)}\n`)
  if (options.tokenizer)
    await writeAtomic(path.join(dir, CheckpointFile.Tokenizer), tokenizerJson(options.tokenizer))
}

/** A loaded checkpoint. */
export interface LoadedCheckpoint {
  model: Transformer
  tokenizer: Tokenizer
  /** The safetensors `__metadata__`. */
  metadata: Record<string, string>
}

/** What `readCheckpointWeights` reads. */
export interface CheckpointWeights {
  config: FullTransformerConfig
  /** The trained parameters by name: every weight, or under `lora` the adapters alone (triad names). */
  weights: Record<string, Float32Array>
  metadata: Record<string, string>
  /** The LoRA settings of an adapter checkpoint. */
  lora?: FullLoraConfig
  /** With `lora`: the directory of the frozen weights. */
  base?: string
}

/** Reads and decodes a weights file; every tensor must hold finite values only. */
async function readSafetensorsFile(file: string) {
  let bytes: Uint8Array
  try {
    bytes = await readFile(file)
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  const decoded = decodeSafetensors(bytes, file)
  for (const [name, t] of Object.entries(decoded.tensors)) assertFiniteTensor(file, name, t.data)
  return decoded
}

/**
 * Reads a checkpoint's weights (or adapters) as plain arrays, checked against its config.
 * @throws CheckpointError naming the file for a missing file, a bad config or LoRA setting, a
 *   missing, misshapen or unexpected tensor; NonFiniteWeightsError (a CheckpointError) for a tensor
 *   with NaN or infinite values, naming the file and the tensor.
 */
export async function readCheckpointWeights(dir: string): Promise<CheckpointWeights> {
  const configFile = path.join(dir, CheckpointFile.Config)
  const raw = (await readJsonFile(configFile)) as Partial<CheckpointConfig>
  if (raw.architecture !== 'triad-decoder')
    throw new CheckpointError(
      configFile,
      `architecture ${JSON.stringify(raw.architecture)} is not triad-decoder`,
    )
  let config: FullTransformerConfig
  let lora: FullLoraConfig | undefined
  try {
    const { lora: rawLora, base: _base, architecture: _arch, ...rest } = raw
    config = fullConfig(rest as FullTransformerConfig)
    if (rawLora !== undefined) lora = fullLoraConfig(rawLora as LoraConfig)
  } catch (err) {
    throw new CheckpointError(configFile, (err as Error).message, { cause: err })
  }
  if (lora) {
    if (typeof raw.base !== 'string' || !raw.base)
      throw new CheckpointError(configFile, 'has lora settings but no base directory')
    const file = path.join(dir, CheckpointFile.Adapters)
    const { tensors, metadata } = await readSafetensorsFile(file)
    try {
      return { config, weights: fromPeftTensors(tensors, config, lora), metadata, lora, base: raw.base }
    } catch (err) {
      throw new CheckpointError(file, (err as Error).message, { cause: err })
    }
  }
  const weightsFile = path.join(dir, CheckpointFile.Weights)
  const { tensors, metadata } = await readSafetensorsFile(weightsFile)
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
 * The frozen weights of an adapter checkpoint's base (a Hugging Face directory or a triad
 * checkpoint without adapters), checked against the adapter checkpoint's config.
 * @param options.memoryLimitBytes as in `readHfModelWeights` (default the backend's memory).
 * @throws CheckpointError when the base is missing, has adapters itself, or is another model size.
 */
export async function readBaseWeights(
  base: string,
  config: FullTransformerConfig,
  options: { memoryLimitBytes?: number } = {},
): Promise<Record<string, Float32Array>> {
  if (!existsSync(base)) throw new CheckpointError(base, 'base model directory of the adapters is missing')
  const read = (await isHfModelDir(base))
    ? await readHfModelWeights(base, { contextLength: config.contextLength, ...options })
    : await readCheckpointWeights(base)
  if ('lora' in read && read.lora) throw new CheckpointError(base, 'a base model cannot hold adapters itself')
  if (JSON.stringify(read.config) !== JSON.stringify(config))
    throw new CheckpointError(
      base,
      `base model config ${JSON.stringify(read.config)} differs from the adapters' ${JSON.stringify(config)}`,
    )
  return read.weights
}

/**
 * A checkpoint's model on the current backend: its weights, or its base's weights with its adapters.
 * @throws CheckpointError (see `readCheckpointWeights`, `readBaseWeights`); ModelTooLargeError,
 *   from `config.json` before the weights are read, for a model larger than the backend's memory.
 */
export async function loadCheckpointModel(
  dir: string,
): Promise<{ model: Transformer; metadata: Record<string, string> }> {
  const configFile = path.join(dir, CheckpointFile.Config)
  if (existsSync(configFile)) {
    const raw = (await readJsonFile(configFile)) as Partial<CheckpointConfig>
    let config: FullTransformerConfig | undefined
    try {
      const { lora: _lora, base: _base, architecture: _arch, ...rest } = raw
      config = fullConfig(rest as FullTransformerConfig)
    } catch {} // a bad config is named by readCheckpointWeights
    if (config && raw.architecture === 'triad-decoder') checkModelFits(dir, config)
  }
  const read = await readCheckpointWeights(dir)
  if (!read.lora)
    return { model: createTransformer(read.config, { weights: read.weights }), metadata: read.metadata }
  const weights = await readBaseWeights(read.base!, read.config)
  const model = createTransformer(read.config, {
    weights,
    lora: read.lora,
    adapters: read.weights,
    base: read.base,
  })
  return { model, metadata: read.metadata }
}

/**
 * Loads a checkpoint directory (with its triad tokenizer) into a new model on the current backend.
 * @throws CheckpointError on a missing or malformed file or weights that do not fit the config.
 */
export async function loadCheckpoint(dir: string): Promise<LoadedCheckpoint> {
  // config.json first: it says what the directory is, so a broken one is the error named.
  const { model, metadata } = await loadCheckpointModel(dir)
  // The tokenizer with its merges, if any (the model's vocabulary includes them).
  const tokenizer = await loadTokenizer(path.join(dir, CheckpointFile.Tokenizer)).catch((err: unknown) => {
    disposeTransformer(model)
    throw err
  })
  if (tokenizer.vocabSize !== model.config.vocabSize) {
    const vocab = model.config.vocabSize
    disposeTransformer(model)
    throw new CheckpointError(dir, `tokenizer has ${tokenizer.vocabSize} ids, model ${vocab}`)
  }
  return { model, tokenizer, metadata }
}
