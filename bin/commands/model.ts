import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { writeTinyQwen3 } from '../../gpu/index.ts'
import { CliError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'

/** Options of `triad model tiny`. */
export interface TinyModelOptions {
  /** Transformer blocks. */
  layers: number
  /** Seed of the random weights. */
  seed: number
  /** `max_position_embeddings` of the config. */
  contextLength: number
}

/**
 * Refuses an output directory that holds anything, or a path that is not a directory: the tiny
 * checkpoint is written only into a missing or empty directory, so no file of the user's is replaced.
 * @throws CliError (one line, exit 1) naming the path.
 */
export function assertWritableOut(out: string): void {
  const stat = statSync(out, { throwIfNoEntry: false })
  if (!stat) return
  if (!stat.isDirectory()) throw new CliError(`${out} exists and is not a directory`)
  const entries = readdirSync(out)
  if (entries.length > 0)
    throw new CliError(
      `${out} is not empty (${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}); give a new or empty directory`,
    )
}

/**
 * `triad model tiny OUT`: writes the tiny random Qwen3-layout checkpoint (`writeTinyQwen3`:
 * `config.json`, `model.safetensors`, `generation_config.json`, and Qwen3's real `tokenizer.json`
 * and `tokenizer_config.json` with its chat template) into OUT, a new or empty directory, and prints
 * each file written with its size. `recipes/tiny-hf.ts` runs on it; it does not learn.
 * @throws CliError when OUT is not empty or not a directory (nothing is written).
 */
export async function tinyModelCommand(out: string, o: TinyModelOptions): Promise<void> {
  assertWritableOut(out)
  const written = await writeTinyQwen3(out, {
    layers: o.layers,
    seed: o.seed,
    contextLength: o.contextLength,
  })
  const c = written.config
  process.stdout.write(
    `wrote a tiny random ${String((c.architectures as string[])[0])} checkpoint to ${out} ` +
      `(${c.num_hidden_layers} layer${c.num_hidden_layers === 1 ? '' : 's'}, width ${c.hidden_size}, ` +
      `vocabulary ${c.vocab_size}, context ${c.max_position_embeddings}, ${c.torch_dtype}, seed ${o.seed}):\n`,
  )
  for (const f of written.files) process.stdout.write(`  ${f} (${statSync(join(out, f)).size} bytes)\n`)
}

/** Registers `triad model` and its subcommand `tiny`. */
export function registerModel(program: Command): void {
  const model = program.command('model').description('model directories: write the tiny test checkpoint')
  model
    .command('tiny')
    .description(
      'write a tiny random Qwen3-layout Hugging Face checkpoint with the real Qwen3 tokenizer and chat template (recipes/tiny-hf.ts runs on it)',
    )
    .argument('<out>', 'the directory to write (new or empty)')
    .option('--layers <n>', 'transformer blocks', integerOption({ min: 1 }), 1)
    .option('--seed <n>', 'seed of the random weights', integerOption({ min: 0 }), 0)
    .option('--context-length <n>', 'max_position_embeddings', integerOption({ min: 16 }), 4096)
    .action(tinyModelCommand)
}
