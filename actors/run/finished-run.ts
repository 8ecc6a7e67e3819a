import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, join, relative } from 'node:path'
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

/** The exit status of a run stopped by a signal: 128 + the signal's number (SIGINT 2, SIGTERM 15). */
export const RUN_SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const

/** Why a run stopped, as its `stop` event in `logs/run.jsonl` says (`reason`). */
export type RunStopReason = 'steps' | 'time' | 'signal' | 'failed'

/** How a run that is not running any more ended: its last `stop` event in `logs/run.jsonl`. */
export interface RunEnd {
  /** The learner step it stopped at. */
  step: number
  /** When it stopped, ms since the Unix epoch. */
  time: number
  reason: RunStopReason
  /** SIGINT or SIGTERM when a signal stopped it. */
  signal?: 'SIGINT' | 'SIGTERM'
  /** The exit status `triad run` ended with: 0 at a budget, 130 or 143 for a signal, 1 when it failed. */
  exitCode: number
  /**
   * Its end-of-run evaluation (`eval/final-<ms>.json`, absolute path): the one the stop event
   * names, else the newest final file of that step; undefined when there is none.
   */
  evalFile?: string
  /** Restarts of each role's process during the last attempt. */
  restarts?: Record<string, number>
}

/**
 * The events of `logs/run.jsonl` (`start`, `resume`, `transport`, `stop`, ...), in file order;
 * lines that are not a JSON object (a torn last line) are passed over. Empty without the file.
 */
export async function readRunEvents(dir: RunDir): Promise<Record<string, unknown>[]> {
  let text: string
  try {
    text = await readFile(join(dir.logsDir, 'run.jsonl'), 'utf8')
  } catch {
    return []
  }
  const events: Record<string, unknown>[] = []
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    try {
      const event = JSON.parse(line)
      if (event && typeof event === 'object' && !Array.isArray(event)) events.push(event)
    } catch {
      // a torn line
    }
  }
  return events
}

/**
 * How the run in `dir` ended, from `logs/run.jsonl`: undefined while it runs (its last `start` or
 * `resume` event comes after its last `stop`), when it never stopped cleanly (SIGKILL, a crash:
 * no `stop` event), or when there is no log. Lines that are not JSON are passed over. Reads only.
 */
export async function readRunEnd(dir: RunDir): Promise<RunEnd | undefined> {
  const last = (await readRunEvents(dir))
    .filter((e) => e.event === 'start' || e.event === 'resume' || e.event === 'stop')
    .at(-1)
  if (last?.event !== 'stop') return undefined
  const reason = (['steps', 'time', 'signal', 'failed'] as const).find((r) => r === last.reason) ?? 'failed'
  const signal = last.signal === 'SIGINT' || last.signal === 'SIGTERM' ? last.signal : undefined
  const step = typeof last.steps === 'number' ? last.steps : 0
  const exitCode = signal ? RUN_SIGNAL_EXIT_CODES[signal] : reason === 'failed' ? 1 : 0
  let evalFile = typeof last.evalFile === 'string' && existsSync(last.evalFile) ? last.evalFile : undefined
  if (!evalFile && reason !== 'signal' && reason !== 'failed') {
    const { results } = await readEvalResults(dir)
    evalFile = results.filter((r) => isFinalEvalFile(basename(r.file)) && r.result.step === step).at(-1)?.file
  }
  const restarts =
    last.restarts && typeof last.restarts === 'object' ? (last.restarts as Record<string, number>) : undefined
  return {
    step,
    time: typeof last.time === 'number' ? last.time : 0,
    reason,
    ...(signal ? { signal } : {}),
    exitCode,
    ...(evalFile ? { evalFile } : {}),
    ...(restarts ? { restarts } : {}),
  }
}

/** What a run's stop reason says in a line: `step budget`, `time budget`, `interrupted by SIGINT`, `failed`. */
const STOP_WORDS: Record<RunStopReason, string> = {
  steps: 'step budget',
  time: 'time budget',
  signal: 'interrupted',
  failed: 'failed',
}

/**
 * The line `triad status --run` and `triad monitor --run` print for a run that ended:
 * `run R ended at step 40, 2026-12-04T18:00:00.000Z, exit 0 (step budget), final evaluation in eval/final-1764860400000.json`
 * (the time in UTC; the evaluation file relative to the run directory; `no final evaluation` when none).
 */
export function runEndLine(dir: RunDir, end: RunEnd): string {
  const why = end.signal ? `${STOP_WORDS[end.reason]} by ${end.signal}` : STOP_WORDS[end.reason]
  const evaluated = end.evalFile
    ? `final evaluation in ${relative(dir.path, end.evalFile)}`
    : 'no final evaluation'
  return `run ${dir.id} ended at step ${end.step}, ${new Date(end.time).toISOString()}, exit ${end.exitCode} (${why}), ${evaluated}`
}
