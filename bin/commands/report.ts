import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Command } from 'commander'
import {
  NotARunDirError,
  onLearnerAxis,
  openRunDir,
  readEvalResults,
  readMetricsFile,
} from '../../actors/index.ts'
import { CliError } from '../errors.ts'
import { buildChartSections, latestPerTask, taskNames } from '../report/chart-groups.ts'
import { continuousCounters } from '../report/counter-continuity.ts'
import { evalCharts, withEvalCharts } from '../report/eval-charts.ts'
import { renderReportHtml } from '../report/render-html.ts'

/** A rendered report and what it holds. */
export interface BuiltReport {
  html: string
  /** Number of charts on the page. */
  charts: number
  /** Metrics lines read (valid ones). */
  lines: number
  /** Evaluation tables. */
  evals: number
}

/**
 * Reads a run directory (`recipe.json`, `metrics.jsonl`, `eval/*.json`) and renders its report:
 * charts of the metrics (counters continuous across restarts and resumes, which the facts list),
 * avg@k and pass@k per task over steps when several steps were evaluated, and the evaluation
 * tables.
 * @throws NotARunDirError when `runDir` is not a run.
 */
export async function buildReport(runDir: string): Promise<BuiltReport> {
  const { dir, recipe } = await openRunDir(runDir, { create: false })
  const metrics = await readMetricsFile(dir.metricsFile)
  const evals = await readEvalResults(dir)
  const recipeTasks = (recipe as { tasks?: { name?: unknown }[] } | null)?.tasks
  const known = Array.isArray(recipeTasks)
    ? recipeTasks.map((t) => t?.name).filter((n): n is string => typeof n === 'string')
    : []
  const metricSections = buildChartSections(metrics.lines, known)
  const latest = latestPerTask(metricSections, taskNames(metrics.lines, known))
  const sections = withEvalCharts(metricSections, evalCharts(evals.results))
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
  const html = renderReportHtml({
    runId: dir.id,
    recipe,
    sections,
    latest,
    evals: evals.results,
    facts,
    warnings,
  })
  return {
    html,
    charts: sections.reduce((n, s) => n + s.charts.length, 0),
    lines: metrics.lines.length,
    evals: evals.results.length,
  }
}

/** `triad report RUN_DIR [--out FILE]`. */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report (charts, evaluation tables) of a run directory')
    .argument('<run-dir>', 'the run directory (runs/<name>-<timestamp>)')
    .option('--out <file>', 'where to write the HTML (default: <run-dir>/report.html)')
    .action(async (runDir: string, options: { out?: string }) => {
      let report: BuiltReport
      try {
        report = await buildReport(runDir)
      } catch (err) {
        if (err instanceof NotARunDirError) throw new CliError(err.message, { cause: err })
        throw err
      }
      const out = options.out ?? join(runDir, 'report.html')
      await writeFile(out, report.html).catch((err: Error) => {
        throw new CliError(`cannot write ${out}: ${err.message}`, { cause: err })
      })
      process.stdout.write(
        `${JSON.stringify({ report: out, charts: report.charts, lines: report.lines, evals: report.evals, bytes: Buffer.byteLength(report.html) })}\n`,
      )
    })
}
