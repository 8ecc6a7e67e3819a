import type { Command } from 'commander'
import { chooseBackend, disposeTransformer } from '../../gpu/index.ts'
import { resolveCheckpointPath } from '../checkpoint-path.ts'
import { CliError } from '../errors.ts'
import { loadModelDir } from '../model-dir.ts'
import { integerOption } from '../numeric-option.ts'
import { buildChatServer } from '../serve/chat-server.ts'

/** Options of `triad serve`. */
export interface ServeCommandOptions {
  /** TCP port; 0 picks a free one (the line on stdout says which). */
  port: number
  host: string
  /** The model id clients name; default the MODEL argument as given. */
  servedModelName?: string
  /** Most sequences decoded together. */
  maxBatch: number
  /** Most context positions to allocate (caps a Hugging Face model's `max_position_embeddings`). */
  contextLength?: number
  backend?: string
}

/**
 * The model directory to serve for `triad serve MODEL`: a triad checkpoint or a Hugging Face
 * directory (either holds `config.json`) as it is; a run directory (it holds `recipe.json`) as its
 * newest checkpoint.
 * @throws CliError for a run without checkpoints, or a path that is neither.
 */
export function resolveServedCheckpoint(path: string, log: (line: string) => void): string {
  return resolveCheckpointPath(path, { what: 'a model directory', doing: 'serving', todo: 'serve' }, log)
}

/**
 * `triad serve MODEL`: an OpenAI-compatible server (`/v1/models`, `/v1/chat/completions`, see
 * `buildChatServer`) for a triad checkpoint or a Hugging Face directory, until SIGINT or SIGTERM. Prints
 * `serving MODEL_NAME at http://HOST:PORT/v1` on stdout once it listens.
 * @throws CliError for a model that cannot be loaded or a port that cannot be bound.
 */
export async function serveCommand(modelPath: string, o: ServeCommandOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const dir = resolveServedCheckpoint(modelPath, log)
  await chooseBackend({ backend: o.backend, log })
  const { model, format } = await loadModelDir(dir, o.contextLength)
  const name = o.servedModelName ?? modelPath
  const server = buildChatServer({
    model,
    format,
    name,
    maxBatch: o.maxBatch,
  })
  let address: string
  try {
    address = await server.app.listen({ port: o.port, host: o.host })
  } catch (err) {
    await server.close()
    disposeTransformer(model)
    throw new CliError(`cannot listen on ${o.host}:${o.port}: ${(err as Error).message}`, { cause: err })
  }
  process.stdout.write(`serving ${name} at ${address}/v1\n`)
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'))
    process.once('SIGTERM', () => resolve('SIGTERM'))
  })
  await server.close()
  disposeTransformer(model)
  process.exitCode = signal === 'SIGINT' ? 130 : 143
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'serve a triad checkpoint or a Hugging Face model over an OpenAI-compatible HTTP API (/v1/chat/completions)',
    )
    .argument(
      '<model>',
      'a triad checkpoint or Hugging Face model directory, or a run directory for its latest checkpoint',
    )
    .option('--port <port>', 'TCP port (0: a free one)', integerOption({ min: 0, max: 65535 }), 8000)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--served-model-name <name>', 'the model id clients send (default: the <model> argument)')
    .option('--max-batch <n>', 'most sequences decoded together', integerOption({ min: 1 }), 64)
    .option(
      '--context-length <n>',
      "cap on the context allocated (default the model's)",
      integerOption({ min: 2 }),
    )
    .option('--backend <name>', 'tensor backend (default: the best available)')
    .action(serveCommand)
}
