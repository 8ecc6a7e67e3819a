import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs'
import type { Command } from 'commander'
import { z } from 'zod'
import {
  type ChatFormat,
  CheckpointError,
  ConfigError,
  chooseBackend,
  disposeTransformer,
  generate,
  isHfModelDir,
  loadCheckpoint,
  loadCheckpointModel,
  loadHfModel,
  loadJinjaChatFormat,
  loadPretrainedTokenizer,
  readCheckpointWeights,
  readHfGenerationConfig,
  readHfModelConfig,
  ShapeError,
  TemplateError,
  type Transformer,
  TriadChatFormat,
  tokenLogprobs,
} from '../../gpu/index.ts'
import { ChatMessageSchema, ToolSchemaSchema } from '../../protocols/index.ts'
import { resolveCheckpointPath } from '../checkpoint-path.ts'
import { CliError, UsageError } from '../errors.ts'
import { isModelLoadError } from '../model-dir.ts'
import { integerOption, numberOption } from '../numeric-option.ts'

/** Options of `triad generate`. */
export interface GenerateOptions {
  /** Comma-separated prompt token ids. */
  promptIds?: string
  /** A text prompt, encoded with the model's tokenizer as it is (no chat template). */
  prompt?: string
  /** A JSON file of chat messages (`[...]` or `{messages, tools}`), rendered with the model's chat template and its generation prompt. */
  messages?: string
  maxNewTokens: number
  /** 0 is greedy. */
  temperature: number
  seed: number
  /** Most context positions to allocate (caps a pretrained model's `max_position_embeddings`). */
  contextLength?: number
  backend?: string
  json?: boolean
}

/** What `triad generate --json` prints. */
export interface GenerateOutput {
  prompt_ids: number[]
  /** The generated ids (the stop token included when one ended the generation). */
  ids: number[]
  /** The ids decoded with the model's tokenizer; null for a Hugging Face directory without `tokenizer.json`. */
  text: string | null
  /** `logprobs[i]`: natural log of the probability of `ids[i]` under the model's softmax at temperature 1. */
  logprobs: number[]
  finish_reason: string
}

function parseIds(text: string, vocabSize: number): number[] {
  const parts = text.split(',').map((s) => s.trim())
  const ids = parts.map(Number)
  const bad = parts.findIndex((s, i) => !/^\d+$/.test(s) || ids[i]! >= vocabSize)
  if (parts.length === 0 || bad >= 0)
    throw new UsageError(
      `--prompt-ids: '${parts[bad] ?? text}' is not a token id in 0..${vocabSize - 1} (give comma-separated ids, e.g. 1,2,3)`,
    )
  return ids
}

/** Text in and out: a tokenizer's encode and decode. */
interface TextCodec {
  encode(text: string): Int32Array
  decode(ids: ArrayLike<number>): string
}

/** A model with what turns text and chat messages into its ids, where the directory has it. */
interface LoadedModel {
  model: Transformer
  stopTokens: number[]
  /** The tokenizer; undefined for a Hugging Face directory without `tokenizer.json`. */
  codec?: TextCodec
  /** The chat format (read on first use: a pretrained template is only needed for `--messages`). */
  chat(): ChatFormat
}

/**
 * Loads a triad checkpoint, a Hugging Face directory, or a checkpoint of LoRA adapters on a Hugging
 * Face base (a run's checkpoint of a pretrained policy: the base's tokenizer, chat template and end
 * ids). @throws CliError (one line) when it cannot.
 */
async function loadModel(dir: string, contextLength: number | undefined): Promise<LoadedModel> {
  if (!existsSync(dir))
    throw new UsageError(
      `${dir}: no such directory (give a Hugging Face model directory or a triad checkpoint)`,
    )
  try {
    if (await isHfModelDir(dir)) {
      const hf = await loadHfModel(dir, { contextLength })
      const codec = existsSync(join(dir, 'tokenizer.json')) ? loadPretrainedTokenizer(dir) : undefined
      return {
        model: hf.model,
        stopTokens: hf.generation?.eosTokenIds ?? hf.eosTokenIds,
        codec,
        chat: () => loadJinjaChatFormat(dir),
      }
    }
    const read = await readCheckpointWeights(dir)
    if (read.lora && read.base && (await isHfModelDir(read.base))) {
      const base = read.base
      const { model } = await loadCheckpointModel(dir)
      const generation = await readHfGenerationConfig(base)
      return {
        model,
        stopTokens: generation?.eosTokenIds ?? readHfModelConfig(base).eosTokenIds,
        codec: existsSync(join(base, 'tokenizer.json')) ? loadPretrainedTokenizer(base) : undefined,
        chat: () => loadJinjaChatFormat(base),
      }
    }
    const ckpt = await loadCheckpoint(dir)
    return {
      model: ckpt.model,
      stopTokens: [ckpt.tokenizer.imEndId, ckpt.tokenizer.eosId],
      codec: ckpt.tokenizer,
      chat: () => new TriadChatFormat(ckpt.tokenizer),
    }
  } catch (err) {
    if (isModelLoadError(err)) throw new CliError(`cannot load model: ${err.message}`, { cause: err })
    throw err
  }
}

/** A `--messages` file: an array of chat messages, or `{messages, tools?}`. */
const MessagesArray = z.array(ChatMessageSchema)
const MessagesObject = z.object({ messages: MessagesArray, tools: z.array(ToolSchemaSchema).optional() })

/**
 * The prompt ids of the one of `--prompt-ids`, `--prompt` or `--messages` given (checked before the
 * model loads).
 * @throws UsageError (exit 2) for bad ids, `--prompt` with a model without a
 *   tokenizer, or a messages file that cannot be read, parsed or rendered (naming the file and field).
 */
function promptOf(o: GenerateOptions, loaded: LoadedModel, dir: string): number[] {
  if (o.promptIds !== undefined) return parseIds(o.promptIds, loaded.model.config.vocabSize)
  if (o.prompt !== undefined) {
    if (!loaded.codec) throw new UsageError(`--prompt: ${dir} has no tokenizer.json; give --prompt-ids`)
    return Array.from(loaded.codec.encode(o.prompt))
  }
  const file = o.messages!
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new UsageError(`--messages: cannot read ${file} as JSON: ${(err as Error).message}`, { cause: err })
  }
  // the shape the file has decides the schema, so an error names the field (not the union)
  const parsed = Array.isArray(json)
    ? MessagesArray.transform((messages) => ({
        messages,
        tools: [] as z.infer<typeof ToolSchemaSchema>[],
      })).safeParse(json)
    : MessagesObject.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new UsageError(`--messages: ${file}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`)
  }
  const { messages, tools } = parsed.data
  try {
    const chat = loaded.chat()
    return [...chat.render(messages, tools ?? []), ...chat.generationPrompt()]
  } catch (err) {
    if (err instanceof TemplateError || err instanceof CheckpointError)
      throw new UsageError(`--messages: ${err.message}`, { cause: err })
    throw err
  }
}

/**
 * `triad generate MODEL --prompt-ids 1,2,3 | --prompt TEXT | --messages FILE.json`: sampled (or greedy, `--temperature 0`) continuation of
 * token ids from a triad checkpoint, a Hugging Face directory or a run directory (its latest checkpoint), with each token's log-probability
 * under the model at temperature 1 (a scoring pass over prompt and continuation).
 * @throws UsageError unless exactly one prompt option is given, for a MODEL path that is not there,
 *   bad ids and a bad messages file; CliError for a model that cannot be loaded, a prompt too long.
 */
export async function generateCommand(path: string, o: GenerateOptions): Promise<void> {
  const given = [o.promptIds, o.prompt, o.messages].filter((x) => x !== undefined).length
  if (given !== 1)
    throw new UsageError(
      'give the prompt as exactly one of --prompt-ids 1,2,3, --prompt TEXT or --messages FILE.json',
    )
  const say = (line: string) => process.stderr.write(`${line}\n`)
  // Before the backend's line: a path that is not there is one line of its own.
  if (!existsSync(path))
    throw new UsageError(
      `${path}: no such directory (give a Hugging Face model directory or a triad checkpoint)`,
    )
  // A run directory stands for its latest checkpoint, as for eval, serve and env try.
  const modelDir =
    existsSync(path) && !existsSync(join(path, 'config.json'))
      ? resolveCheckpointPath(
          path,
          { what: 'a model directory', doing: 'generating with', todo: 'generate with' },
          say,
        )
      : path
  await chooseBackend({ backend: o.backend, log: say })
  const loaded = await loadModel(modelDir, o.contextLength)
  const { model, stopTokens, codec } = loaded
  try {
    const prompt = promptOf(o, loaded, modelDir)
    let gen: Awaited<ReturnType<typeof generate>>[number]
    try {
      ;[gen] = (await generate(model, [prompt], {
        maxNewTokens: o.maxNewTokens,
        temperature: o.temperature,
        seed: o.seed,
        stopTokens,
      })) as [Awaited<ReturnType<typeof generate>>[number]]
    } catch (err) {
      if (err instanceof ShapeError || err instanceof ConfigError)
        throw new CliError(err.message, { cause: err })
      throw err
    }
    const ids = Array.from(gen.tokens)
    // log p(ids[i]) at temperature 1: score prompt + ids[:-1] against ids
    const all = [...prompt, ...ids]
    const n = all.length - 1
    const lp = tf.tidy(() =>
      tokenLogprobs(
        model,
        tf.tensor2d(all.slice(0, n), [1, n], 'int32'),
        tf.tensor2d(all.slice(1), [1, n], 'int32'),
      ),
    )
    const logprobs = Array.from(lp.dataSync()).slice(prompt.length - 1)
    lp.dispose()
    const out: GenerateOutput = {
      prompt_ids: prompt,
      ids,
      text: codec ? codec.decode(ids) : null,
      logprobs,
      finish_reason: gen.finishReason,
    }
    if (o.json) process.stdout.write(`${JSON.stringify(out)}\n`)
    else {
      process.stdout.write(`ids: ${ids.join(',')}\n`)
      if (out.text !== null) process.stdout.write(`text: ${JSON.stringify(out.text)}\n`)
      process.stdout.write(`finish: ${gen.finishReason}\n`)
    }
  } finally {
    disposeTransformer(model)
  }
}

export function registerGenerate(program: Command): void {
  program
    .command('generate')
    .description(
      'continue a prompt (token ids, text or chat messages) with a triad checkpoint or a Hugging Face model',
    )
    .argument(
      '<model>',
      'a triad checkpoint directory, a Hugging Face model directory, or a run directory for its latest checkpoint',
    )
    .option('--prompt-ids <ids>', 'comma-separated prompt token ids, e.g. 1,2,3')
    .option('--prompt <text>', "a text prompt, encoded with the model's tokenizer as it is")
    .option(
      '--messages <file>',
      "a JSON file of chat messages ([...] or {messages, tools}) rendered with the model's chat template",
    )
    .option('--max-new-tokens <n>', 'most tokens to generate', integerOption({ min: 1 }), 32)
    .option('--temperature <t>', 'sampling temperature; 0 is greedy', numberOption({ min: 0 }), 1)
    .option('--seed <s>', 'sampling seed', integerOption({ min: 0 }), 0)
    .option(
      '--context-length <n>',
      "cap on the context allocated (default the model's)",
      integerOption({ min: 2 }),
    )
    .option('--backend <name>', 'tensor backend (default: the best available)')
    .option('--json', 'print one JSON object {prompt_ids, ids, text, logprobs, finish_reason}')
    .action(generateCommand)
}
