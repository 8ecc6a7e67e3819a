import { join } from 'node:path'
import { type RunEnd, readRunEnd, runDirPaths, runEndLine } from '../../actors/index.ts'
import { checkToken } from '../../protocols/index.ts'
import { UsageError } from '../errors.ts'

/** A run that is not running any more, as `triad status --run` and `triad monitor --run` show it. */
export interface EndedRun {
  /** The run id. */
  run: string
  /** Absolute path of its run directory. */
  dir: string
  end: RunEnd
  /** `run R ended at step N, <time>, exit <code> (<why>), final evaluation in eval/final-<ms>.json`. */
  line: string
}

/**
 * Run `run` under `runsDir` when its run directory says it ended (`readRunEnd`: its
 * `logs/run.jsonl` holds a `stop` after its last start or resume): nothing of it is live to ask
 * on NATS. Undefined when it runs, stopped uncleanly, or has no run directory here (the caller's
 * own errors say what then).
 * @throws UsageError for a run id that is not a valid token.
 */
export async function findEndedRun(runsDir: string, run: string): Promise<EndedRun | undefined> {
  try {
    checkToken(run, 'run id')
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err })
  }
  const dir = runDirPaths(join(runsDir, run))
  const end = await readRunEnd(dir)
  return end ? { run, dir: dir.path, end, line: runEndLine(dir, end) } : undefined
}

/** The JSON `triad status --json` and `triad monitor --once --json` print for an ended run. */
export function endedRunJson(ended: EndedRun) {
  return { run: ended.run, dir: ended.dir, ended: true, ...ended.end }
}
