import { existsSync, readdirSync } from 'node:fs'
import { basename, join } from 'node:path'
import { readLatestCheckpoint } from '../pipeline/index.ts'
import { runDirPaths } from './run-dir.ts'

/** A model checkpoint of a run directory. */
export interface RunCheckpoint {
  /** The checkpoint directory (`model.safetensors`, `config.json`, `tokenizer.json`). */
  dir: string
  /** Its name in `checkpoints/`: `step-50`, or `sft` for the cold-start SFT. */
  name: string
  /** The learner step of its weights (0 for the SFT). */
  step: number
}

const isCheckpoint = (dir: string) => existsSync(join(dir, 'config.json'))

/**
 * The newest model checkpoint of the run in directory `path`: the step checkpoint that
 * `checkpoints/latest.json` names (looked up by its name in this run's `checkpoints/`, so a run
 * opened from another working directory or moved elsewhere still resolves), else the highest
 * `checkpoints/step-N/` holding a `config.json`, else `checkpoints/sft/`. Undefined when the run
 * has none of them yet.
 */
export function latestRunCheckpoint(path: string): RunCheckpoint | undefined {
  const dir = runDirPaths(path).checkpointsDir
  const latest = readLatestCheckpoint(dir)
  if (latest) {
    // readLatestCheckpoint resolves the recorded dir by name in this run's checkpoints/.
    if (isCheckpoint(latest.dir)) return { dir: latest.dir, name: basename(latest.dir), step: latest.version }
  }
  let best: RunCheckpoint | undefined
  const entries = existsSync(dir) ? readdirSync(dir) : []
  for (const name of entries) {
    const m = /^step-(\d+)$/.exec(name)
    if (!m || !isCheckpoint(join(dir, name))) continue
    const step = Number(m[1])
    if (!best || step > best.step) best = { dir: join(dir, name), name, step }
  }
  if (best) return best
  const sft = join(dir, 'sft')
  return isCheckpoint(sft) ? { dir: sft, name: 'sft', step: 0 } : undefined
}
