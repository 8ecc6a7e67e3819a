import { basename } from 'node:path'
import { readLatestCheckpoint } from '../pipeline/index.ts'
import { isFinalEvalFile, readEvalResults } from './eval-file.ts'
import type { RunDir } from './run-dir.ts'

/** A run with nothing left to do: its step budget is reached and its last checkpoint evaluated. */
export interface FinishedRun {
  /** Version (learner step) of the run's latest checkpoint, at or past the step budget. */
  step: number
  /** The step budget it was measured against. */
  maxSteps: number
  /**
   * The end-of-run evaluation of that checkpoint (`eval/final-<ms>.json`, absolute path; the
   * newest when there are several); undefined when the recipe evaluates nothing (`evaluation.k` 0).
   */
  evalFile?: string
}

/** Options of `findFinishedRun`. */
export interface FindFinishedRunOptions {
  /** The step budget of the recipe given now; undefined (a time budget only) never finishes a run. */
  maxSteps: number | undefined
  /** False when the recipe has no end-of-run evaluation (`evaluation.k` 0): none is looked for. */
  evaluates: boolean
}

/**
 * Whether the run in `dir` is finished for a step budget of `maxSteps`: its latest checkpoint
 * (`checkpoints/latest.json`) is at or past `maxSteps`, and an end-of-run evaluation file
 * `eval/final-<ms>.json` records that checkpoint's step and has rows of it (`checkpoint:
 * "step-<n>"`). A run stopped before or during its final evaluation, or whose evaluation of that
 * checkpoint failed (a final file with the SFT rows only), is not finished: a resume evaluates it
 * again. Reads only.
 * @returns the finished run, or undefined when there is something left to do.
 */
export async function findFinishedRun(
  dir: RunDir,
  options: FindFinishedRunOptions,
): Promise<FinishedRun | undefined> {
  if (options.maxSteps === undefined) return undefined
  let latest: ReturnType<typeof readLatestCheckpoint>
  try {
    latest = readLatestCheckpoint(dir.checkpointsDir)
  } catch {
    return undefined // unreadable: the learner's own start reports it
  }
  if (!latest || latest.version < options.maxSteps) return undefined
  const finished = { step: latest.version, maxSteps: options.maxSteps }
  if (!options.evaluates) return finished
  const { results } = await readEvalResults(dir)
  const final = results
    .filter(
      (r) =>
        isFinalEvalFile(basename(r.file)) &&
        r.result.step === latest.version &&
        r.result.rows.some((row) => row.checkpoint === `step-${latest.version}`),
    )
    .at(-1)
  return final ? { ...finished, evalFile: final.file } : undefined
}
