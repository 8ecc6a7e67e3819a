import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { latestRunCheckpoint, runDirPaths } from '../../actors/index.ts'
import {
  CheckpointError,
  chooseBackend,
  disposeTransformer,
  isHfModelDir,
  type LoadedCheckpoint,
  loadCheckpoint,
  TriadChatFormat,
} from '../../gpu/index.ts'
import { CliError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'
import { buildChatServer } from '../serve/chat-server.ts'

/** Options of `triad serve`. */
export interface ServeOptions {
  /** TCP port; 0 picks a free one (the line on stdout says which). */
  port: number
  host: string
  /** The model id clients name; default the MODEL argument as given. */
  servedModelName?: string
  /** Most sequences decoded together. */
  maxBatch: number
  backend?: string
}

/**
 * The checkpoint directory to serve for `triad serve MODEL`: a triad checkpoint (it holds
 * `config.json`) as it is; a run directory (it holds `recipe.json`) as its newest checkpoint.
 * @throws CliError for a Hugging Face directory (not served yet), a run without checkpoints, or a
 *   path that is neither.
 */
export async function resolveServedCheckpoint(path: string, log: (line: string) => void): Promise<string> {
  if (existsSync(join(path, 'config.json'))) {
    if (await isHfModelDir(path))
      throw new CliError(
        `${path} is a Hugging Face model directory: triad serve serves triad checkpoints only in this version`,
      )
    return path
  }
  const run = runDirPaths(path)
  if (existsSync(run.recipeFile)) {
    const latest = latestRunCheckpoint(path)
    if (!latest)
      throw new CliError(
        `${path} is a run directory without a checkpoint yet (${run.checkpointsDir} holds no step-N/ or sft/ with a config.json)`,
      )
    log(
      `${path} is a run directory: serving its latest checkpoint ${latest.dir} (${latest.name === 'sft' ? 'the cold-start SFT' : `learner step ${latest.step}`})`,
    )
    return latest.dir
  }
  throw new CliError(
    `${path} is neither a checkpoint (no config.json) nor a run directory (no recipe.json): pass a checkpoint such as runs/<run>/checkpoints/step-50, or a run directory to serve its latest checkpoint`,
  )
}

/**
 * `triad serve MODEL`: an OpenAI-compatible server (`/v1/models`, `/v1/chat/completions`, see
 * `buildChatServer`) for a triad checkpoint, until SIGINT or SIGTERM. Prints
 * `serving MODEL_NAME at http://HOST:PORT/v1` on stdout once it listens.
 * @throws CliError for a model that cannot be loaded or a port that cannot be bound.
 */
export async function serveCommand(modelPath: string, o: ServeOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const dir = await resolveServedCheckpoint(modelPath, log)
  await chooseBackend({ backend: o.backend, log })
  let ckpt: LoadedCheckpoint
  try {
    ckpt = await loadCheckpoint(dir)
  } catch (err) {
    if (err instanceof CheckpointError)
      throw new CliError(`cannot load model: ${err.message}`, { cause: err })
    throw err
  }
  const name = o.servedModelName ?? modelPath
  const server = buildChatServer({
    model: ckpt.model,
    format: new TriadChatFormat(ckpt.tokenizer),
    name,
    maxBatch: o.maxBatch,
  })
  let address: string
  try {
    address = await server.app.listen({ port: o.port, host: o.host })
  } catch (err) {
    await server.close()
    disposeTransformer(ckpt.model)
    throw new CliError(`cannot listen on ${o.host}:${o.port}: ${(err as Error).message}`, { cause: err })
  }
  process.stdout.write(`serving ${name} at ${address}/v1\n`)
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'))
    process.once('SIGTERM', () => resolve('SIGTERM'))
  })
  await server.close()
  disposeTransformer(ckpt.model)
  process.exitCode = signal === 'SIGINT' ? 130 : 143
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve a triad checkpoint over an OpenAI-compatible HTTP API (/v1/chat/completions)')
    .argument('<model>', 'a triad checkpoint directory, or a run directory for its latest checkpoint')
    .option('--port <port>', 'TCP port (0: a free one)', integerOption({ min: 0, max: 65535 }), 8000)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--served-model-name <name>', 'the model id clients send (default: the <model> argument)')
    .option('--max-batch <n>', 'most sequences decoded together', integerOption({ min: 1 }), 64)
    .option('--backend <name>', 'tensor backend (default: the best available)')
    .action(serveCommand)
}
