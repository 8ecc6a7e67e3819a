import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Command } from 'commander'
import {
  NotARunDirError,
  onLearnerAxis,
  openRunDir,
  readEvalResults,
  readMetricsFile,
  readRunEvents,
} from '../../actors/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { buildChartSections, latestPerTask, taskNames } from '../report/chart-groups.ts'
import { continuousCounters } from '../report/counter-continuity.ts'
import { buildDashboard, PALETTE, RUN_DASHES, type RunCharts } from '../report/dashboard.ts'
import { evalCharts } from '../report/eval-charts.ts'
import { type ReportRun, renderReportHtml } from '../report/render-html.ts'
import { type RunSummary, summarizeRun } from '../report/run-summary.ts'

/** A rendered report and what it holds. */
export interface BuiltReport {
  html: string
  /** Number of charts on the page (drawn ones; constants are listed). */
  charts: number
  /** Metrics lines read (valid ones, all runs). */
  lines: number
  /** Evaluation tables (all runs). */
  evals: number
  /** Metrics listed as constants instead of drawn. */
  constants: number
}

/** One run read for the report: its page parts and its charts. */
interface ReadRun {
  run: ReportRun
  summary: RunSummary
  charts: RunCharts
  tasks: Set<string>
  lines: number
}

/**
 * Reads a run directory (`recipe.json`, `logs/run.jsonl`, `metrics.jsonl`, `eval/*.json`): its
 * summary (`summarizeRun`: facts and the held-out table of its final evaluation), its charts (counters
 * continuous across restarts and resumes, which the facts list), avg@k and pass@k per task over
 * the evaluated steps with their standard errors, the latest values per task and its tables.
 * @throws NotARunDirError when `runDir` is not a run.
 */
async function readRun(runDir: string): Promise<ReadRun> {
  const { dir, recipe } = await openRunDir(runDir, { create: false })
  const metrics = await readMetricsFile(dir.metricsFile)
  const evals = await readEvalResults(dir)
  const recipeTasks = (recipe as { tasks?: { name?: unknown }[] } | null)?.tasks
  const known = Array.isArray(recipeTasks)
    ? recipeTasks.map((t) => t?.name).filter((n): n is string => typeof n === 'string')
    : []
  const sections = buildChartSections(metrics.lines, known)
  const tasks = taskNames(metrics.lines, known)
  const latest = latestPerTask(sections, tasks)
  for (const { result } of evals.results)
    for (const row of result.rows) if (typeof row.task === 'string') tasks.add(row.task)
  // reduce, not Math.min(...xs): a long run has more lines than a call takes arguments
  const range = (xs: number[]) =>
    xs.reduce(([lo, hi], x) => [Math.min(lo, x), Math.max(hi, x)], [Infinity, -Infinity])
  const [firstStep, lastStep] = range(metrics.lines.filter(onLearnerAxis).map((l) => l.step))
  const [firstTime, lastTime] = range(metrics.lines.map((l) => l.time))
  const facts: [string, string][] = [['metrics lines', String(metrics.lines.length)]]
  if (metrics.lines.length) {
    facts.push(['steps', `${firstStep}–${lastStep}`])
    facts.push(['started', new Date(firstTime).toISOString()])
    facts.push(['span', `${((lastTime - firstTime) / 60_000).toFixed(1)} min`])
  }
  const { resets } = continuousCounters(metrics.lines)
  if (resets.length)
    facts.push([
      'counters continued across restarts',
      `${resets
        .slice(0, 5)
        .map((r) => `${r.actor} at step ${r.step}`)
        .join(', ')}${resets.length > 5 ? `, ... (${resets.length})` : ''}`,
    ])
  facts.push(['roles', [...new Set(metrics.lines.map((l) => l.role))].sort().join(', ') || '-'])
  const warnings: string[] = []
  if (metrics.bad.length)
    warnings.push(
      `metrics.jsonl: skipped ${metrics.bad.length} line(s) that are not metrics reports (line ${metrics.bad.slice(0, 5).join(', ')}${metrics.bad.length > 5 ? ', ...' : ''})`,
    )
  for (const e of evals.errors) warnings.push(e.message)
  const summary = summarizeRun({
    runId: dir.id,
    recipe,
    events: await readRunEvents(dir),
    lines: metrics.lines,
    evals: evals.results,
  })
  return {
    summary,
    run: { runId: dir.id, recipe, latest, evals: evals.results, facts, warnings },
    // One evaluated step is a point with its error bar: a run evaluated once still shows it.
    charts: { runId: dir.id, sections, evalCharts: evalCharts(evals.results, 1) },
    tasks,
    lines: metrics.lines.length,
  }
}

/**
 * The report of one run, or of several overlaid (the variants of an ablation: one chart per
 * metric, a line per run and task, a dash pattern per run): a summary first (each run's facts and
 * held-out table, SFT against final checkpoint with the paired difference; side by side for
 * several runs), the headline charts (held-out avg@k, training success, throughput), the dashboard panels (held-out
 * avg@k and pass@k with error bars, training reward and success with a smoothing control, the
 * policy update, the reward model, difficulty, throughput and staleness), then every other metric
 * by namespace, folded, constants listed; then each run's latest values, evaluation tables and recipe.
 * A task has the same colour in every chart (its place among the runs' tasks, sorted).
 * @throws NotARunDirError when a path is not a run.
 */
export async function buildReport(runDirs: string | readonly string[]): Promise<BuiltReport> {
  const dirs = typeof runDirs === 'string' ? [runDirs] : runDirs
  const runs: ReadRun[] = []
  for (const d of dirs) runs.push(await readRun(d))
  const tasks = [...new Set(runs.flatMap((r) => [...r.tasks]))].sort()
  const sections = buildDashboard(
    runs.map((r) => r.charts),
    tasks,
  )
  const html = renderReportHtml({
    runs: runs.map((r) => r.run),
    sections,
    taskColours: tasks.map((t, i) => [t, PALETTE[i % PALETTE.length]!]),
    runDashes: runs.map((r, i) => [r.run.runId, RUN_DASHES[i % RUN_DASHES.length]!]),
    summaries: runs.map((r) => r.summary),
  })
  return {
    html,
    charts: sections.reduce((n, s) => n + s.charts.length, 0),
    lines: runs.reduce((n, r) => n + r.lines, 0),
    evals: runs.reduce((n, r) => n + r.run.evals.length, 0),
    constants: sections.reduce((n, s) => n + s.constants.length, 0),
  }
}

/** `triad report RUN_DIR [RUN_DIR ...] [--out FILE] [--json]`: writes the page and prints its path. */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'write one self-contained HTML dashboard of a run directory, or of several overlaid (charts, evaluation tables)',
    )
    .argument('<run-dirs...>', 'the run directories (runs/<name>-<timestamp>); several are overlaid')
    .option(
      '--out <file>',
      'where to write the HTML (default: <run-dir>/report.html; required for several runs)',
    )
    .option(
      '--json',
      'print one JSON line (the file, and its runs, charts, constants, lines, evals and bytes) instead of the path',
    )
    .action(async (runDirs: string[], options: { out?: string; json?: boolean }) => {
      if (runDirs.length > 1 && !options.out)
        throw new UsageError('--out FILE is required with several run directories (the report overlays them)')
      let report: BuiltReport
      try {
        report = await buildReport(runDirs)
      } catch (err) {
        if (err instanceof NotARunDirError) throw new CliError(err.message, { cause: err })
        throw err
      }
      const out = options.out ?? join(runDirs[0]!, 'report.html')
      await writeFile(out, report.html).catch((err: NodeJS.ErrnoException) => {
        const why =
          err.code === 'EISDIR'
            ? `it is a folder; give a file (--out ${join(out, 'report.html')})`
            : err.code === 'ENOENT'
              ? `the folder ${dirname(out)} does not exist`
              : err.code === 'ENOTDIR'
                ? `a part of ${dirname(out)} is a file, not a folder`
                : err.message
        throw new CliError(`cannot write ${out}: ${why}`, { cause: err })
      })
      // The file it wrote; with --json, that and what it holds, for scripts.
      process.stdout.write(
        options.json
          ? `${JSON.stringify({ report: out, runs: runDirs.length, charts: report.charts, constants: report.constants, lines: report.lines, evals: report.evals, bytes: Buffer.byteLength(report.html) })}\n`
          : `written ${out}\n`,
      )
    })
}
