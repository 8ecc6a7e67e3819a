import { existsSync } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { CheckpointFile, readBaseWeights, readCheckpointWeights } from './checkpoint.ts'
import { CheckpointError } from './errors.ts'
import { type HfArchitecture, hfArchitectureOf, toHfConfig } from './hf-config.ts'
import { HfFile, isHfModelDir, readHfModelWeights } from './hf-model.ts'
import { toHfTensors } from './hf-tensors.ts'
import { hfTokenizerConfigJson, hfTokenizerJson } from './hf-tokenizer-export.ts'
import { mergeAdapters } from './lora.ts'
import { encodeSafetensors, type NamedTensor, SafetensorsDtype } from './safetensors.ts'
import { loadTokenizer } from './tokenizer-file.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/**
 * `triad export CHECKPOINT --hf OUT`: writes a Hugging Face model directory that transformers,
 * vLLM and llama.cpp's converter load: `config.json` (`architectures`: Qwen3 with q/k norms, Qwen2
 * with q/k/v biases, else Llama; triad's own models are Llama with tied embeddings), the weights
 * under HF tensor names in `model.safetensors` (or shards with `model.safetensors.index.json` above
 * `maxShardBytes`), `generation_config.json`, and the tokenizer files with the chat template the
 * model was trained with: triad's tokenizer in `tokenizer.json` form and triad's chat format as the
 * `chat_template` of `tokenizer_config.json` (`hf-tokenizer-export.ts`, `triad-jinja-template.ts`),
 * or a Hugging Face source's own files copied (its `chat_template`, or `chat_template.jinja`). A
 * checkpoint of LoRA adapters is exported with them merged into its base's weights
 * (`mergeAdapters`: `W + (alpha / rank) B A`), with its base's tokenizer files when the base is a
 * Hugging Face directory.
 *
 * Everything is read and converted before anything is written, into a temporary directory renamed
 * to `OUT` at the end, so bad input leaves nothing behind.
 */

/** The tokenizer files copied from a Hugging Face source when present. */
const HF_TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'vocab.json',
  'merges.txt',
  'tokenizer.model',
  'added_tokens.json',
  // Newer models keep their chat template here instead of in tokenizer_config.json.
  'chat_template.jinja',
] as const

/** Options of `exportHf`. */
export interface ExportHfOptions {
  /** Stored dtype; default F32 (exact: the export loads back to identical logits). */
  dtype?: SafetensorsDtype
  /** Largest shard in bytes before splitting; default 2 GiB. */
  maxShardBytes?: number
}

/** What `exportHf` wrote. */
export interface ExportHfResult {
  outDir: string
  architecture: HfArchitecture
  /** File names written, sorted. */
  files: string[]
}

const TORCH_DTYPE: Readonly<Record<SafetensorsDtype, string>> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
}

/**
 * Exports a triad checkpoint directory (or a Hugging Face directory, re-written) to `outDir`.
 * @throws CheckpointError when the source is unreadable or `outDir` exists; the loaders' errors
 *   (UnsupportedArchitectureError, ModelTooLargeError) for a Hugging Face source.
 */
export async function exportHf(
  source: string,
  outDir: string,
  options: ExportHfOptions = {},
): Promise<ExportHfResult> {
  const dtype = options.dtype ?? SafetensorsDtype.F32
  if (!Object.values(SafetensorsDtype).includes(dtype))
    throw new CheckpointError(
      outDir,
      `dtype ${dtype} is not one of ${Object.values(SafetensorsDtype).join(', ')}`,
    )
  if (existsSync(outDir)) throw new CheckpointError(outDir, 'already exists; export writes a new directory')
  const files: Record<string, Uint8Array | string> = {}
  const copies: string[] = []
  let config: FullTransformerConfig
  let weights: Record<string, Float32Array>
  let tokens: { bosTokenId?: number; eosTokenIds: number[]; padTokenId?: number } = { eosTokenIds: [] }
  let generation: Record<string, unknown> = {}
  const hfSource = async (dir: string) => {
    const hf = await readHfModelWeights(dir, { memoryLimitBytes: Number.POSITIVE_INFINITY })
    tokens = { bosTokenId: hf.bosTokenId, eosTokenIds: hf.eosTokenIds, padTokenId: hf.padTokenId }
    const genFile = path.join(dir, HfFile.GenerationConfig)
    generation = existsSync(genFile)
      ? (JSON.parse(await readFile(genFile, 'utf8')) as Record<string, unknown>)
      : generationConfig(tokens)
    for (const f of HF_TOKENIZER_FILES) if (existsSync(path.join(dir, f))) copies.push(path.join(dir, f))
    return hf
  }
  if (await isHfModelDir(source)) {
    const hf = await hfSource(source)
    config = hf.config
    weights = hf.weights
  } else {
    const ckpt = await readCheckpointWeights(source)
    config = ckpt.config
    weights = ckpt.weights
    if (ckpt.lora) {
      // Adapters: merged into the base's weights; the tokenizer is the base's when it is a HF model.
      const base = ckpt.base!
      const baseWeights = await readBaseWeights(base, config, { memoryLimitBytes: Number.POSITIVE_INFINITY })
      weights = mergeAdapters(baseWeights, ckpt.weights, config, ckpt.lora)
      if (await isHfModelDir(base)) await hfSource(base)
    }
    if (!ckpt.lora || !(await isHfModelDir(ckpt.base!))) {
      const tokenizerDir = existsSync(path.join(source, CheckpointFile.Tokenizer)) ? source : ckpt.base!
      const tokenizer = await loadTokenizer(path.join(tokenizerDir, CheckpointFile.Tokenizer))
      if (tokenizer.vocabSize !== config.vocabSize)
        throw new CheckpointError(
          source,
          `tokenizer has ${tokenizer.vocabSize} ids, model ${config.vocabSize}`,
        )
      tokens = { eosTokenIds: [tokenizer.imEndId, tokenizer.eosId], padTokenId: tokenizer.padId }
      generation = generationConfig(tokens)
      files[HfFile.Tokenizer] = `${JSON.stringify(hfTokenizerJson(tokenizer))}\n`
      files[HfFile.TokenizerConfig] =
        `${JSON.stringify(hfTokenizerConfigJson(tokenizer, config.contextLength), null, 2)}\n`
    }
  }
  const architecture = hfArchitectureOf(config)
  files[HfFile.Config] =
    `${JSON.stringify(toHfConfig(config, tokens, { torchDtype: TORCH_DTYPE[dtype] }), null, 2)}\n`
  files[HfFile.GenerationConfig] = `${JSON.stringify(generation, null, 2)}\n`
  Object.assign(files, weightFilesOf(toHfTensors(config, weights), dtype, options.maxShardBytes ?? 2 ** 31))

  const tmp = `${outDir}.tmp-${process.pid}`
  await rm(tmp, { recursive: true, force: true })
  await mkdir(tmp, { recursive: true })
  try {
    for (const [name, data] of Object.entries(files)) await writeFile(path.join(tmp, name), data)
    for (const f of copies) await copyFile(f, path.join(tmp, path.basename(f)))
    await rename(tmp, outDir)
  } catch (err) {
    await rm(tmp, { recursive: true, force: true })
    throw new CheckpointError(outDir, `cannot write: ${(err as Error).message}`, { cause: err })
  }
  return { outDir, architecture, files: (await readdir(outDir)).sort() }
}

function generationConfig(tokens: { bosTokenId?: number; eosTokenIds: number[]; padTokenId?: number }) {
  return {
    ...(tokens.bosTokenId !== undefined ? { bos_token_id: tokens.bosTokenId } : {}),
    eos_token_id: tokens.eosTokenIds.length === 1 ? tokens.eosTokenIds[0] : tokens.eosTokenIds,
    ...(tokens.padTokenId !== undefined ? { pad_token_id: tokens.padTokenId } : {}),
    do_sample: true,
    temperature: 1.0,
    top_p: 1.0,
  }
}

/** The safetensors file(s): one file, or shards of at most `maxShardBytes` with their index. */
function weightFilesOf(
  tensors: Record<string, NamedTensor>,
  dtype: SafetensorsDtype,
  maxShardBytes: number,
): Record<string, Uint8Array | string> {
  const width = dtype === SafetensorsDtype.F32 ? 4 : 2
  const names = Object.keys(tensors).sort()
  const groups: string[][] = [[]]
  let size = 0
  let total = 0
  for (const n of names) {
    const bytes = width * tensors[n]!.data.length
    total += bytes
    if (size + bytes > maxShardBytes && groups.at(-1)!.length) {
      groups.push([])
      size = 0
    }
    groups.at(-1)!.push(n)
    size += bytes
  }
  const meta = { format: 'pt' }
  if (groups.length === 1) return { [HfFile.Weights]: encodeSafetensors(tensors, meta, { dtype }) }
  const out: Record<string, Uint8Array | string> = {}
  const weightMap: Record<string, string> = {}
  groups.forEach((group, i) => {
    const file = `model-${String(i + 1).padStart(5, '0')}-of-${String(groups.length).padStart(5, '0')}.safetensors`
    out[file] = encodeSafetensors(Object.fromEntries(group.map((n) => [n, tensors[n]!])), meta, { dtype })
    for (const n of group) weightMap[n] = file
  })
  out[HfFile.WeightsIndex] =
    `${JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2)}\n`
  return out
}
