import { type MetricsLine, onLearnerAxis } from '../../actors/index.ts'
import { MetricsAxes, type MetricsAxis } from '../../protocols/index.ts'

/** One row of the tidy long table of a run's metrics: one value of one key in one report. */
export interface MetricRow {
  /** The report's step, on `axis`. */
  step: number
  /** What `step` counts: `learner` (the learner step), `sft` or `reward_model_sft` (their SFT steps). */
  axis: MetricsAxis
  key: string
  value: number
  /** Wall-clock time of the report, seconds since the Unix epoch (TensorBoard's `wall_time`). */
  wall_time: number
  /** Reporting role (`learner`, `rollout`, `policy`, ...) and its id: together, the source. */
  role: string
  id: string
}

/** The columns of `formatMetricsCsv`, in order. */
export const METRICS_CSV_COLUMNS = ['step', 'axis', 'key', 'value', 'wall_time', 'role', 'id'] as const

/**
 * The tidy long table of metrics lines: one row per finite value, in file order, keys of one line
 * sorted; with `prefix`, only keys that start with it.
 */
export function tidyRows(lines: readonly MetricsLine[], prefix = ''): MetricRow[] {
  const rows: MetricRow[] = []
  for (const line of lines) {
    const axis = line.axis ?? MetricsAxes.learner
    for (const key of Object.keys(line.values).sort()) {
      const value = line.values[key]!
      if (!key.startsWith(prefix) || !Number.isFinite(value)) continue
      rows.push({
        step: line.step,
        axis,
        key,
        value,
        wall_time: line.time / 1000,
        role: line.role,
        id: line.id,
      })
    }
  }
  return rows
}

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
function csvField(v: string | number): string {
  const s = String(v)
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

/** Rows as CSV with a header line (`METRICS_CSV_COLUMNS`), `\n` line ends, wall time to the ms. */
export function formatMetricsCsv(rows: readonly MetricRow[]): string {
  const out = [METRICS_CSV_COLUMNS.join(',')]
  for (const r of rows)
    out.push([r.step, r.axis, r.key, r.value, r.wall_time.toFixed(3), r.role, r.id].map(csvField).join(','))
  return `${out.join('\n')}\n`
}

/** What `triad metrics RUN_DIR` shows per key. */
export interface KeySummary {
  key: string
  /** Values reported. */
  points: number
  /** Distinct reporters (`role:id`). */
  sources: number
  axis: MetricsAxis
  firstStep: number
  lastStep: number
  /** The value of the newest report (by wall time), over all sources. */
  last: number
}

/** One summary per key, sorted by key. */
export function summarizeKeys(rows: readonly MetricRow[]): KeySummary[] {
  const by = new Map<string, KeySummary & { sourceSet: Set<string>; lastTime: number }>()
  for (const r of rows) {
    const s = by.get(r.key)
    if (!s) {
      by.set(r.key, {
        key: r.key,
        points: 1,
        sources: 1,
        sourceSet: new Set([`${r.role}:${r.id}`]),
        axis: r.axis,
        firstStep: r.step,
        lastStep: r.step,
        last: r.value,
        lastTime: r.wall_time,
      })
      continue
    }
    s.points++
    s.sourceSet.add(`${r.role}:${r.id}`)
    s.firstStep = Math.min(s.firstStep, r.step)
    s.lastStep = Math.max(s.lastStep, r.step)
    if (r.wall_time >= s.lastTime) {
      s.lastTime = r.wall_time
      s.last = r.value
    }
  }
  return [...by.values()]
    .sort((a, b) => a.key.localeCompare(b.key))
    .map(({ sourceSet, lastTime: _, ...s }) => ({ ...s, sources: sourceSet.size }))
}

/** Learner steps the lines span (undefined without a learner-axis line). */
export function learnerStepRange(lines: readonly MetricsLine[]): [number, number] | undefined {
  let range: [number, number] | undefined
  for (const l of lines)
    if (onLearnerAxis(l))
      range = range ? [Math.min(range[0], l.step), Math.max(range[1], l.step)] : [l.step, l.step]
  return range
}
