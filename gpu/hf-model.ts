import { existsSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import * as tf from '@tensorflow/tfjs'
import { CheckpointError, ModelTooLargeError } from './errors.ts'
import { fromHfConfig, type HfModelConfig } from './hf-config.ts'
import { fromHfTensors, hfTensorShapes, isIgnoredHfTensor } from './hf-tensors.ts'
import { readJsonFile } from './json-file.ts'
import {
  assertFiniteTensor,
  readSafetensorsHeader,
  readSafetensorsTensors,
  type SafetensorsHeader,
} from './safetensors.ts'
import { createTransformer, parameterBytes, type Transformer } from './transformer.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/**
 * A Hugging Face model directory as a triad `Transformer`: `config.json` (architectures
 * `LlamaForCausalLM`, `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, see `hf-config.ts`), the weights in
 * `model.safetensors` or in shards listed by `model.safetensors.index.json` (F32, F16 or BF16,
 * widened to float32), and `generation_config.json` when present. The tokenizer files are not read
 * here.
 *
 * Everything is checked before any weight is read: the architecture and settings, the size against
 * the backend's memory, that every shard exists, and every tensor's name, dtype and shape; then
 * every tensor read is checked to hold finite values only.
 */

/** File names of a Hugging Face model directory. */
export const HfFile = {
  Config: 'config.json',
  Weights: 'model.safetensors',
  WeightsIndex: 'model.safetensors.index.json',
  GenerationConfig: 'generation_config.json',
  Tokenizer: 'tokenizer.json',
  TokenizerConfig: 'tokenizer_config.json',
} as const
export type HfFile = (typeof HfFile)[keyof typeof HfFile]

/** The fields of `generation_config.json` triad reads (as given; absent fields stay absent). */
export interface HfGenerationConfig {
  bosTokenId?: number
  eosTokenIds: number[]
  padTokenId?: number
  doSample?: boolean
  temperature?: number
  top_p?: number
  topK?: number
  maxNewTokens?: number
}

/** Options of `loadHfModel`. */
export interface LoadHfModelOptions {
  /** Cap on the context in tokens (default the model's `max_position_embeddings`). */
  contextLength?: number
  /** Memory the backend can hold, bytes; default `backendMemoryLimit()`. */
  memoryLimitBytes?: number
}

/** The wasm backend's heap limit: 4 GiB (32-bit addresses). */
export const WASM_HEAP_BYTES = 2 ** 32

/** Reads a small text file, or `undefined` when it is not there. */
function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Memory this process can still take, bytes, and where the number comes from: `MemAvailable` of
 * `/proc/meminfo` (what the kernel can give without swapping: free memory plus reclaimable
 * caches), or `os.freemem()` where there is no such file; lowered to the cgroup's `memory.max` less
 * its `memory.current` when the process runs in a cgroup (v2) with a memory limit (a container).
 */
export function availableMemory(): { bytes: number; source: string } {
  const kb = /^MemAvailable:\s+(\d+) kB$/m.exec(readText('/proc/meminfo') ?? '')
  let out = kb
    ? {
        bytes: Number(kb[1]) * 1024,
        source: "the machine's available memory (MemAvailable of /proc/meminfo)",
      }
    : { bytes: os.freemem(), source: "the machine's free memory (os.freemem())" }
  const max = Number(readText('/sys/fs/cgroup/memory.max')?.trim())
  const current = Number(readText('/sys/fs/cgroup/memory.current')?.trim())
  if (Number.isFinite(max) && Number.isFinite(current) && max - current < out.bytes)
    out = {
      bytes: Math.max(0, max - current),
      source: "the cgroup's memory left (memory.max less memory.current of /sys/fs/cgroup)",
    }
  return out
}

/**
 * Bytes the active tfjs backend can hold, and what that limit is in words (`source`): 4 GiB for
 * wasm (its heap); for native and cpu, which keep tensors in process memory, the memory available
 * now (`availableMemory()`: a model loaded beside others gets what they left); for tfjs-node and
 * tfjs-node-gpu (tfjs names both `tensorflow`) the machine's total memory (the device's, which tfjs
 * does not report, bounds tfjs-node-gpu, so this is an upper bound there).
 */
export function backendMemoryLimit(): { bytes: number; backend: string; source: string } {
  const backend = tf.getBackend()
  if (backend === 'wasm') return { bytes: WASM_HEAP_BYTES, backend, source: 'its heap (32-bit addresses)' }
  if (backend === 'native' || backend === 'cpu') return { ...availableMemory(), backend }
  return { bytes: os.totalmem(), backend, source: "the machine's total memory (os.totalmem())" }
}

/**
 * Bytes a model needs on the backend: its float32 parameters plus one transposed copy of the output
 * projection (`[width, vocabSize]`, made by every forward pass).
 */
export function modelMemoryBytes(config: FullTransformerConfig): number {
  return parameterBytes(config) + 4 * config.vocabSize * config.width
}

/**
 * Refuses a model whose `modelMemoryBytes` exceed the backend's memory, before any weight is read.
 * @param limitBytes the limit; default `backendMemoryLimit()`.
 * @throws ModelTooLargeError naming the model's need and the limit (GiB and bytes), what the limit
 *   is, and what to do.
 */
export function checkModelFits(dir: string, config: FullTransformerConfig, limitBytes?: number): void {
  const limit =
    limitBytes !== undefined
      ? { bytes: limitBytes, backend: tf.getBackend(), source: 'the limit given' }
      : backendMemoryLimit()
  const need = modelMemoryBytes(config)
  if (need > limit.bytes)
    throw new ModelTooLargeError(dir, need, limit.bytes, limit.backend, { limitSource: limit.source })
}

/** Reads `generation_config.json` when the directory has one. @throws CheckpointError on bad JSON. */
export async function readHfGenerationConfig(dir: string): Promise<HfGenerationConfig | undefined> {
  const file = path.join(dir, HfFile.GenerationConfig)
  if (!existsSync(file)) return undefined
  const raw = (await readJsonFile(file)) as Record<string, unknown>
  if (typeof raw !== 'object' || raw === null) throw new CheckpointError(file, 'is not a JSON object')
  const num = (k: string) => (typeof raw[k] === 'number' ? (raw[k] as number) : undefined)
  const eos = raw.eos_token_id
  const out: HfGenerationConfig = {
    eosTokenIds:
      typeof eos === 'number' ? [eos] : Array.isArray(eos) ? eos.filter((x) => typeof x === 'number') : [],
  }
  const set = <K extends keyof HfGenerationConfig>(key: K, v: HfGenerationConfig[K] | undefined) => {
    if (v !== undefined) out[key] = v
  }
  set('bosTokenId', num('bos_token_id'))
  set('padTokenId', num('pad_token_id'))
  set('doSample', typeof raw.do_sample === 'boolean' ? raw.do_sample : undefined)
  set('temperature', num('temperature'))
  set('top_p', num('top_p'))
  set('topK', num('top_k'))
  set('maxNewTokens', num('max_new_tokens'))
  return out
}

/** Weight files of a directory: the shards of its index, or `model.safetensors`. */
async function weightFiles(dir: string): Promise<{ files: string[]; index?: Map<string, string> }> {
  const indexFile = path.join(dir, HfFile.WeightsIndex)
  if (existsSync(indexFile)) {
    const raw = (await readJsonFile(indexFile)) as { weight_map?: unknown }
    const map = raw?.weight_map
    if (typeof map !== 'object' || map === null || Array.isArray(map))
      throw new CheckpointError(indexFile, 'has no weight_map object')
    const index = new Map<string, string>()
    for (const [name, file] of Object.entries(map)) {
      if (typeof file !== 'string' || file.includes('/') || file.includes('\\'))
        throw new CheckpointError(indexFile, `weight_map[${name}] is not a file name in the directory`)
      index.set(name, file)
    }
    const files = [...new Set(index.values())].sort()
    for (const f of files)
      if (!existsSync(path.join(dir, f)))
        throw new CheckpointError(path.join(dir, f), `shard listed in ${HfFile.WeightsIndex} is missing`)
    return { files, index }
  }
  const single = path.join(dir, HfFile.Weights)
  if (!existsSync(single))
    throw new CheckpointError(dir, `has neither ${HfFile.Weights} nor ${HfFile.WeightsIndex}`)
  return { files: [HfFile.Weights] }
}

/** What `readHfModelWeights` reads. */
export interface HfModelWeights extends HfModelConfig {
  /** Weights by triad parameter name (`paramShapes`), float32. */
  weights: Record<string, Float32Array>
  generation: HfGenerationConfig | undefined
}

/**
 * Reads and checks a Hugging Face model directory into triad's weights, without making a model.
 * @throws UnsupportedArchitectureError; ModelTooLargeError (before any weight is read, naming the
 *   size and the limit); CheckpointError for a missing file or shard, an unreadable dtype, a
 *   missing, unexpected or misshapen tensor (naming it, the expected and the found shape);
 *   NonFiniteWeightsError (a CheckpointError) for a tensor with NaN or infinite values, naming the
 *   file, the tensor and the first such value.
 */
export async function readHfModelWeights(
  dir: string,
  options: LoadHfModelOptions = {},
): Promise<HfModelWeights> {
  const configFile = path.join(dir, HfFile.Config)
  const hf = fromHfConfig(await readJsonFile(configFile), configFile, {
    contextLength: options.contextLength,
  })
  const { config } = hf
  checkModelFits(dir, config, options.memoryLimitBytes)
  const generation = await readHfGenerationConfig(dir)

  const { files, index } = await weightFiles(dir)
  const headers = new Map<string, SafetensorsHeader>()
  for (const f of files) headers.set(f, await readSafetensorsHeader(path.join(dir, f)))
  const where = new Map<string, string>() // tensor -> file
  for (const [f, h] of headers)
    for (const name of h.entries.keys()) {
      if (where.has(name))
        throw new CheckpointError(path.join(dir, f), `tensor ${name} is also in ${where.get(name)}`)
      if (index && index.get(name) !== f)
        throw new CheckpointError(
          path.join(dir, f),
          `tensor ${name} is not listed for this shard in ${HfFile.WeightsIndex}`,
        )
      where.set(name, f)
    }
  const expected = hfTensorShapes(config)
  const wanted = new Set(expected.map(([n]) => n))
  for (const [name, shape] of expected) {
    const f = where.get(name)
    if (!f)
      throw new CheckpointError(
        index ? path.join(dir, HfFile.WeightsIndex) : path.join(dir, HfFile.Weights),
        `missing tensor ${name}`,
      )
    const found = headers.get(f)!.entries.get(name)!.shape
    if (found.join(',') !== shape.join(','))
      throw new CheckpointError(
        path.join(dir, f),
        `tensor ${name} has shape [${found.join(', ')}], expected [${shape.join(', ')}]`,
      )
  }
  for (const [name, f] of where)
    if (!wanted.has(name) && !isIgnoredHfTensor(name, config))
      throw new CheckpointError(path.join(dir, f), `unexpected tensor ${name} for ${hf.architecture}`)

  const read = new Map<string, Float32Array>()
  for (const f of files) {
    const names = [...headers.get(f)!.entries.keys()].filter((n) => wanted.has(n))
    await readSafetensorsTensors(path.join(dir, f), headers.get(f)!, names, (name, t) => {
      assertFiniteTensor(path.join(dir, f), name, t.data)
      read.set(name, t.data)
    })
  }
  const weights = fromHfTensors(config, (name) => {
    const data = read.get(name)!
    read.delete(name)
    return data
  })
  return { ...hf, weights, generation }
}

/** A loaded Hugging Face model. */
export interface LoadedHfModel extends HfModelConfig {
  model: Transformer
  generation: HfGenerationConfig | undefined
}

/**
 * Loads a Hugging Face model directory into a new model on the current backend (see
 * `readHfModelWeights` for what is checked and thrown).
 */
export async function loadHfModel(dir: string, options: LoadHfModelOptions = {}): Promise<LoadedHfModel> {
  const { weights, ...rest } = await readHfModelWeights(dir, options)
  return { ...rest, model: createTransformer(rest.config, { weights }) }
}

/**
 * The model config of a Hugging Face directory (its `config.json` alone, read synchronously: recipe
 * checks run while a recipe module loads), without reading a weight.
 * @param options.contextLength cap on the context (default the model's `max_position_embeddings`).
 * @throws CheckpointError naming `config.json` when it is missing, not JSON or has a bad field;
 *   UnsupportedArchitectureError for an architecture triad does not implement.
 */
export function readHfModelConfig(dir: string, options: { contextLength?: number } = {}): HfModelConfig {
  const file = path.join(dir, HfFile.Config)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new CheckpointError(file, 'not JSON', { cause: err })
  }
  return fromHfConfig(raw, file, options)
}

/** Whether a directory looks like a Hugging Face model (a `config.json` with `architectures`). */
export async function isHfModelDir(dir: string): Promise<boolean> {
  const file = path.join(dir, HfFile.Config)
  if (!existsSync(file)) return false
  try {
    const raw = JSON.parse(await readFile(file, 'utf8')) as { architectures?: unknown }
    return Array.isArray(raw.architectures)
  } catch {
    return false
  }
}
