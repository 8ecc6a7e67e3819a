import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeTinyCheckpoint } from './tiny-checkpoint.ts'
import { startTriad } from './triad-process.ts'

/**
 * A tiny triad checkpoint behind `triad serve` (the real command, on the suite's backend: the child
 * inherits TRIAD_BACKEND; test/support/test-backend.ts).
 */
export interface ServedCheckpoint {
  /** The server's base URL, `http://127.0.0.1:<port>/v1`. */
  base: string
  /** The served model's name. */
  model: string
  /** Stops the server and removes the checkpoint. */
  stop(): Promise<void>
}

/**
 * Writes a tiny random checkpoint (context 2048: room for a few turns of the built-in tasks) and
 * serves it with `triad serve --port 0` as `model`.
 */
export async function serveTinyCheckpoint(model = 'tiny'): Promise<ServedCheckpoint> {
  const dir = await mkdtemp(join(tmpdir(), 'triad-served-'))
  const ckpt = join(dir, 'step-1')
  await writeTinyCheckpoint(ckpt, 1, 2048)
  const p = startTriad(['serve', ckpt, '--port', '0', '--served-model-name', model])
  const m = await p.waitForText(/^serving \S+ at (http:\/\/127\.0\.0\.1:\d+\/v1)$/, 60_000)
  return {
    base: m[1]!,
    model,
    stop: async () => {
      await p.kill('SIGTERM')
      await rm(dir, { recursive: true, force: true })
    },
  }
}
