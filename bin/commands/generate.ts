import * as tf from '@tensorflow/tfjs'
import type { Command } from 'commander'
import {
  CheckpointError,
  ConfigError,
  chooseBackend,
  disposeTransformer,
  generate,
  isHfModelDir,
  loadCheckpoint,
  loadHfModel,
  ModelTooLargeError,
  ShapeError,
  type Tokenizer,
  type Transformer,
  tokenLogprobs,
  UnsupportedArchitectureError,
} from '../../gpu/index.ts'
import { CliError } from '../errors.ts'
import { integerOption, numberOption } from '../numeric-option.ts'

/** Options of `triad generate`. */
export interface GenerateOptions {
  /** Comma-separated prompt token ids. */
  promptIds?: string
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
  /** The ids decoded; null for a Hugging Face model (its tokenizer is not read by this command yet). */
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
    throw new CliError(
      `--prompt-ids: '${parts[bad] ?? text}' is not a token id in 0..${vocabSize - 1} (give comma-separated ids, e.g. 1,2,3)`,
    )
  return ids
}

/** Loads a triad checkpoint or a Hugging Face directory. @throws CliError (one line) when it cannot. */
async function loadModel(
  dir: string,
  contextLength: number | undefined,
): Promise<{ model: Transformer; tokenizer?: Tokenizer; stopTokens: number[] }> {
  try {
    if (await isHfModelDir(dir)) {
      const hf = await loadHfModel(dir, { contextLength })
      return { model: hf.model, stopTokens: hf.generation?.eosTokenIds ?? hf.eosTokenIds }
    }
    const ckpt = await loadCheckpoint(dir)
    return {
      model: ckpt.model,
      tokenizer: ckpt.tokenizer,
      stopTokens: [ckpt.tokenizer.imEndId, ckpt.tokenizer.eosId],
    }
  } catch (err) {
    if (
      err instanceof CheckpointError ||
      err instanceof UnsupportedArchitectureError ||
      err instanceof ModelTooLargeError ||
      err instanceof ConfigError
    )
      throw new CliError(`cannot load model: ${err.message}`, { cause: err })
    throw err
  }
}

/**
 * `triad generate MODEL --prompt-ids 1,2,3`: sampled (or greedy, `--temperature 0`) continuation of
 * token ids from a triad checkpoint or a Hugging Face directory, with each token's log-probability
 * under the model at temperature 1 (a scoring pass over prompt and continuation).
 * @throws CliError for a model that cannot be loaded, missing or bad ids, a prompt too long.
 */
export async function generateCommand(modelDir: string, o: GenerateOptions): Promise<void> {
  if (o.promptIds === undefined)
    throw new CliError(
      'give the prompt as --prompt-ids 1,2,3 (text prompts need the model tokenizer, not yet read here)',
    )
  await chooseBackend({ backend: o.backend, log: (line) => process.stderr.write(`${line}\n`) })
  const { model, tokenizer, stopTokens } = await loadModel(modelDir, o.contextLength)
  try {
    const prompt = parseIds(o.promptIds, model.config.vocabSize)
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
      text: tokenizer ? tokenizer.decode(ids) : null,
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
    .description('continue a prompt of token ids with a triad checkpoint or a Hugging Face model')
    .argument('<model>', 'a triad checkpoint directory or a Hugging Face model directory')
    .option('--prompt-ids <ids>', 'comma-separated prompt token ids, e.g. 1,2,3')
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
