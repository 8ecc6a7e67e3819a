import { join } from 'node:path'
import type { Command } from 'commander'
import {
  getTask,
  NotARunDirError,
  openRunDir,
  readTrajectoryLog,
  TRAJECTORY_LOG_FILE,
  TrajectoryLogError,
} from '../../actors/index.ts'
import type { ToolSchema } from '../../protocols/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { outFileFormat, writeTrajectoryFile } from '../trajectories/trajectory-file.ts'
import { trajectoryRows } from '../trajectories/trajectory-rows.ts'

/** Options of `triad trajectories`. */
export interface TrajectoriesOptions {
  out?: string
  format?: string
}

/** The tools of a built-in task; undefined for a name this triad does not know. */
function builtInTools(task: string): ToolSchema[] | undefined {
  try {
    return [...getTask(task).tools]
  } catch {
    return undefined
  }
}

/**
 * `triad trajectories RUN_DIR --out FILE`: the episodes the run's learner trained on, from its
 * trajectory log (`trajectories.bin`), one row per sample (`TrajectoryRow`) as JSONL or parquet
 * (by the extension, or `--format`). Returns the number of rows written.
 * @throws UsageError without `--out`, or for a format that is neither; CliError for a path that is
 *   not a run directory, a run without a trajectory log, or a log that does not decode.
 */
export async function runTrajectories(path: string, o: TrajectoriesOptions): Promise<number> {
  if (!o.out) throw new UsageError('--out FILE is required (FILE.jsonl or FILE.parquet)')
  const format = outFileFormat(o.out, o.format)
  const { dir } = await openRunDir(path).catch((err: unknown) => {
    if (err instanceof NotARunDirError) throw new CliError(err.message, { cause: err })
    throw err
  })
  const logFile = join(dir.path, TRAJECTORY_LOG_FILE)
  let log: ReturnType<typeof readTrajectoryLog>
  try {
    log = readTrajectoryLog(logFile)
  } catch (err) {
    if (err instanceof TrajectoryLogError)
      throw new CliError(
        /no such file/.test(err.reason)
          ? `run ${dir.id} has no trajectory log (${logFile}): it took no RL step yet, or was made before triad kept one`
          : err.message,
        { cause: err },
      )
    throw err
  }
  if (log.truncated)
    process.stderr.write(
      `${logFile}: its last record was cut short (the learner stopped while writing it); left out\n`,
    )
  const rows = trajectoryRows(dir.id, log.records, builtInTools)
  writeTrajectoryFile(o.out, format, rows)
  const steps = log.records.map((r) => r.step)
  process.stderr.write(
    `wrote ${rows.length} episodes of ${log.records.length} groups${steps.length ? ` (learner steps ${Math.min(...steps)}-${Math.max(...steps)})` : ''} to ${o.out}\n`,
  )
  return rows.length
}

/** `triad trajectories RUN_DIR --out FILE.jsonl|FILE.parquet [--format jsonl|parquet]`. */
export function registerTrajectories(program: Command): void {
  program
    .command('trajectories')
    .description(
      'the episodes a run trained on as a dataset: OpenAI messages and tools, reward, status, and the token view',
    )
    .argument('<run-dir>', 'the run directory (runs/<name>-<timestamp>)')
    .option('--out <file>', 'the file to write: FILE.jsonl or FILE.parquet')
    .option('--format <format>', 'jsonl or parquet (default: from the extension of --out)')
    .action(async (path: string, o: TrajectoriesOptions) => {
      await runTrajectories(path, o)
    })
}
