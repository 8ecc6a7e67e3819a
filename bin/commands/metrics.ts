import { existsSync, readdirSync } from 'node:fs'
import Table from 'cli-table3'
import type { Command } from 'commander'
import {
  type MetricsFile,
  NotARunDirError,
  openRunDir,
  type RunDir,
  readMetricsFile,
  TensorBoardWriter,
} from '../../actors/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { formatMetricsCsv, learnerStepRange, summarizeKeys, tidyRows } from '../metrics/tidy-rows.ts'

/** Options of `triad metrics`. */
export interface MetricsOptions {
  csv?: boolean
  json?: boolean
  /** Only keys that start with this. */
  key?: string
  tensorboard?: boolean
}

/** Whether `dir` holds an event file anywhere below it. */
function hasEventFiles(dir: string): boolean {
  if (!existsSync(dir)) return false
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).some((f) => f.includes('tfevents'))
}

/**
 * Writes a run's `metrics.jsonl` as TensorBoard event files into its `tensorboard/` (for runs made
 * before `triad run` wrote them itself).
 * @throws CliError when `tensorboard/` holds event files already (they are never replaced).
 */
export function writeTensorBoardFiles(dir: RunDir, metrics: MetricsFile): number {
  if (hasEventFiles(dir.tensorboardDir))
    throw new CliError(
      `${dir.tensorboardDir} holds event files already; triad never overwrites a run's files (delete it to write them again)`,
    )
  const writer = new TensorBoardWriter({ dir: dir.tensorboardDir })
  for (const line of metrics.lines) writer.write(line)
  writer.close()
  return metrics.lines.length
}

/**
 * `triad metrics RUN_DIR`: a run's metrics from its `metrics.jsonl`: one line per key (points,
 * sources, steps, last value); `--csv` the tidy long table (step, axis, key, value, wall_time,
 * role, id), `--json` the same rows as a JSON array; `--tensorboard` writes the event files.
 * @throws CliError for a path that is not a run directory; UsageError for `--csv` with `--json`.
 */
export async function runMetrics(path: string, o: MetricsOptions): Promise<void> {
  if (o.csv && o.json) throw new UsageError('--csv and --json exclude each other: pick one output')
  const { dir } = await openRunDir(path).catch((err: unknown) => {
    if (err instanceof NotARunDirError) throw new CliError(err.message, { cause: err })
    throw err
  })
  const metrics = await readMetricsFile(dir.metricsFile)
  if (metrics.bad.length)
    process.stderr.write(
      `${dir.metricsFile}: skipped ${metrics.bad.length} line(s) that are not metrics reports (line ${metrics.bad.slice(0, 5).join(', ')}${metrics.bad.length > 5 ? ', ...' : ''})\n`,
    )
  if (o.tensorboard) {
    const n = writeTensorBoardFiles(dir, metrics)
    process.stderr.write(`wrote ${n} metrics lines as TensorBoard event files under ${dir.tensorboardDir}\n`)
    if (!o.csv && !o.json) return
  }
  const rows = tidyRows(metrics.lines, o.key)
  if (o.csv) {
    process.stdout.write(formatMetricsCsv(rows))
    return
  }
  if (o.json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`)
    return
  }
  const range = learnerStepRange(metrics.lines)
  const table = new Table({
    head: ['key', 'points', 'sources', 'axis', 'steps', 'last'],
    style: { head: [], border: [], compact: true },
  })
  for (const s of summarizeKeys(rows))
    table.push([
      s.key,
      s.points,
      s.sources,
      s.axis,
      `${s.firstStep}-${s.lastStep}`,
      Number(s.last.toPrecision(6)),
    ])
  process.stdout.write(
    `run ${dir.id}: ${metrics.lines.length} reports${range ? `, learner steps ${range[0]}-${range[1]}` : ''}\n${table.toString()}\n`,
  )
}

/** `triad metrics RUN_DIR [--csv | --json] [--key PREFIX] [--tensorboard]`. */
export function registerMetrics(program: Command): void {
  program
    .command('metrics')
    .description("a run's metrics from its metrics.jsonl: one line per key, or a tidy long table")
    .argument('<run-dir>', 'the run directory (runs/<name>-<timestamp>)')
    .option('--csv', 'print the tidy long table as CSV: step,axis,key,value,wall_time,role,id')
    .option('--json', 'print the same rows as one JSON array')
    .option('--key <prefix>', 'only keys that start with this (rollout/success/)')
    .option('--tensorboard', "write the metrics as TensorBoard event files into the run's tensorboard/")
    .action((path: string, o: MetricsOptions) => runMetrics(path, o))
}
