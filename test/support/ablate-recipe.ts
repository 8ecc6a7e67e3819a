import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tinyInput } from '../../recipes/tiny.ts'
import { runTriad } from './triad-process.ts'

/**
 * recipes/tiny.ts with a budget of one RL step, a cold start of a few steps and an evaluation of
 * k 1 on 2 instances per task: one run takes seconds (it learns nothing; the numbers are all 0).
 */
export const TINY = {
  ...tinyInput,
  name: 'abl',
  seed: 3,
  pipeline: { ...tinyInput.pipeline, maxNewTokens: 16 },
  triad: {
    ...tinyInput.triad,
    rewardModelSft: {
      steps: 2,
      expertTrajectoriesPerTask: 2,
      policyTrajectoriesPerTask: 2,
      heldOutTrajectoriesPerTask: 1,
    },
  },
  evaluation: { every: 0, k: 1, instancesPerTask: 2 },
  checkpoints: { every: 1, keep: 1 },
  budget: { maxSteps: 1, maxMinutes: 1 },
}

/** A folder with the tiny recipe as `abl.mjs` (a plain object is a recipe too). */
export function tinyRecipe(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'triad-ablate-'))
  const file = join(dir, 'abl.mjs')
  writeFileSync(file, `export default ${JSON.stringify(TINY)}\n`)
  return { dir, file }
}

/** `triad ablate FILE --vary rl.eps_high=0.2 --seeds 1 --out OUT [...more]`. */
export const ablateOne = (file: string, out: string, ...more: string[]) =>
  runTriad(['ablate', file, '--vary', 'rl.eps_high=0.2', '--seeds', '1', '--out', out, ...more])

export interface AblationJson {
  seeds: number[]
  variants: { id: string; sft: string }[]
  runs: {
    variant: string
    seed: number
    status: string
    dir: string
    reason?: string
    code?: string
    machine?: string
    minutes?: number
    rlMinutes?: number
  }[]
  rows: {
    variant: string
    task: string
    seeds: number
    n: number
    avg_at_k: number | null
    diff: number | null
    paired_seeds: number
  }[]
}
