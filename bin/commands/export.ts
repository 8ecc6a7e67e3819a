import type { Command } from 'commander'
import {
  CheckpointError,
  ConfigError,
  exportHf,
  ModelTooLargeError,
  SafetensorsDtype,
  UnsupportedArchitectureError,
} from '../../gpu/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'

/** Options of `triad export`. */
export interface ExportOptions {
  /** Output directory of the Hugging Face layout (must not exist). */
  hf?: string
  /** Stored dtype: f32 (default, exact), bf16 or f16. */
  dtype: string
  /** Largest shard in MiB before the weights are split into shards. */
  maxShardMib?: number
}

const DTYPES: Readonly<Record<string, SafetensorsDtype>> = {
  f32: SafetensorsDtype.F32,
  bf16: SafetensorsDtype.BF16,
  f16: SafetensorsDtype.F16,
}

/**
 * `triad export CHECKPOINT --hf OUT`: a Hugging Face model directory from a triad checkpoint (or a
 * Hugging Face directory), for transformers, vLLM and llama.cpp's converter.
 * @throws UsageError (exit 2) without `--hf` or for an unknown `--dtype`; CliError for any load or
 *   write error (one line).
 */
export async function exportCommand(checkpoint: string, o: ExportOptions): Promise<void> {
  if (!o.hf) throw new UsageError('give the output directory with --hf OUT (the only export format)')
  const dtype = DTYPES[o.dtype.toLowerCase()]
  if (!dtype) throw new UsageError(`--dtype ${o.dtype}: expected one of ${Object.keys(DTYPES).join(', ')}`)
  try {
    const res = await exportHf(checkpoint, o.hf, {
      dtype,
      ...(o.maxShardMib !== undefined ? { maxShardBytes: o.maxShardMib * 2 ** 20 } : {}),
    })
    process.stdout.write(
      `exported ${checkpoint} as ${res.architecture} to ${res.outDir}: ${res.files.join(', ')}\n`,
    )
  } catch (err) {
    if (
      err instanceof CheckpointError ||
      err instanceof UnsupportedArchitectureError ||
      err instanceof ModelTooLargeError ||
      err instanceof ConfigError
    )
      throw new CliError(`cannot export: ${err.message}`, { cause: err })
    throw err
  }
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('write a checkpoint as a Hugging Face model directory (transformers, vLLM, llama.cpp)')
    .argument('<checkpoint>', 'a triad checkpoint directory (or a Hugging Face model directory)')
    .option('--hf <out>', 'the Hugging Face directory to write (must not exist)')
    .option('--dtype <dtype>', 'stored dtype: f32 (exact), bf16 or f16', 'f32')
    .option(
      '--max-shard-mib <n>',
      'split the weights into shards above this many MiB (default 2048)',
      integerOption({ min: 1 }),
    )
    .action(exportCommand)
}
