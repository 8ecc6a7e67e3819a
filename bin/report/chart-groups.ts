import { type MetricsLine, RUN_MAX_STEPS } from '../../actors/index.ts'
import { continuousCounters } from './counter-continuity.ts'
import { ChartKind, chartKindOf } from './metric-kinds.ts'

/** One line chart: a title, the x values (learner steps) and one y array per series. */
export interface Chart {
  /** Chart id and title: the metric key, or its family (`rollout/success`, `policy/clip_frac_*`). */
  title: string
  /** `[points]` learner steps (or the steps of `xLabel`), ascending. */
  x: number[]
  /** What x counts when it is not the learner step (`SFT step`); absent: the learner step. */
  xLabel?: string
  /**
   * Series by label (task name, `high`/`low`, ...): `[points]`, `null` where the series has no
   * value; `se` `[points]` the standard error of each value where known (evaluations).
   */
  series: { label: string; key: string; y: (number | null)[]; se?: (number | null)[] }[]
}

/** Charts of one area (the first segment of the keys: `rollout`, `learner`, ...). */
export interface ChartSection {
  area: string
  charts: Chart[]
}

/** Areas shown first, in this order; others follow alphabetically. */
export const AREA_ORDER = [
  'rollout',
  'eval',
  'sft',
  'learner',
  'policy',
  'pipeline',
  'engine',
  'env',
  'reward',
  'runtime',
]

/** Where one metric key goes: its area, chart and series label. */
interface Placement {
  area: string
  chart: string
  label: string
}

/**
 * Places metric keys into charts, grouped by prefix:
 * - a key whose last segment is a task name (`rollout/success/calc`) is a series of the chart of
 *   its prefix (`rollout/success`, one series per task); the prefix itself as a key (the overall
 *   value) joins that chart as series `all`;
 * - sibling keys whose last segments share a stem before `_` share one chart
 *   (`policy/clip_frac_high` and `..._low` in `policy/clip_frac_*`);
 * - any other key is a chart of its own.
 * The section (area) is the first segment. `tasks` are the run's task names (from its recipe and
 * from `rollout/success/<task>` keys).
 */
export function placeKeys(keys: readonly string[], tasks: ReadonlySet<string>): Map<string, Placement> {
  const out = new Map<string, Placement>()
  const parentOf = (k: string) => k.slice(0, Math.max(0, k.lastIndexOf('/')))
  const lastOf = (k: string) => k.slice(k.lastIndexOf('/') + 1)
  const isTaskKey = (k: string) => k.includes('/') && tasks.has(lastOf(k))
  const perTask = new Set(keys.filter(isTaskKey).map(parentOf))
  const stemOf = (name: string) => (name.includes('_') ? name.slice(0, name.lastIndexOf('_')) : undefined)
  const stemCount = new Map<string, number>()
  for (const k of keys) {
    const stem = stemOf(lastOf(k))
    if (stem && !isTaskKey(k) && !perTask.has(k)) {
      const id = `${parentOf(k)}/${stem}`
      stemCount.set(id, (stemCount.get(id) ?? 0) + 1)
    }
  }
  for (const k of keys) {
    const area = k.includes('/') ? k.slice(0, k.indexOf('/')) : 'other'
    const last = lastOf(k)
    const stem = stemOf(last)
    if (isTaskKey(k)) out.set(k, { area, chart: parentOf(k), label: last })
    else if (perTask.has(k)) out.set(k, { area, chart: k, label: 'all' })
    else if (stem && (stemCount.get(`${parentOf(k)}/${stem}`) ?? 0) >= 2)
      out.set(k, {
        area,
        chart: `${parentOf(k) ? `${parentOf(k)}/` : ''}${stem}_*`,
        label: last.slice(stem.length + 1),
      })
    else out.set(k, { area, chart: k, label: last })
  }
  return out
}

/** Task names of a run: those given (from its recipe) and every `<task>` of `rollout/success/<task>`. */
export function taskNames(lines: readonly MetricsLine[], known: readonly string[] = []): Set<string> {
  const out = new Set(known)
  for (const line of lines)
    for (const key of Object.keys(line.values)) {
      const m = /^rollout\/success\/([^/]+)$/.exec(key)
      if (m) out.add(m[1]!)
    }
  return out
}

/**
 * Areas charted against their own step instead of the learner's: the metric that gives x, the
 * axis label, and the keys not charted (the axis itself and its total). The cold-start SFT reports
 * every SFT step at learner step 0, so its curves are drawn against `sft/step`.
 */
export const AREA_AXES: Readonly<Record<string, { key: string; label: string; hidden: readonly string[] }>> =
  {
    sft: { key: 'sft/step', label: 'SFT step', hidden: ['sft/step', 'sft/steps_total'] },
  }

/** Keys that are facts of the run rather than measurements (`run/max_steps`): never charted. */
export const UNCHARTED_KEYS: ReadonlySet<string> = new Set([RUN_MAX_STEPS])

/** One report of one key by one actor: its x (step) and value. */
interface Point {
  x: number
  v: number
}

/**
 * The values of one key at the steps `xs` (ascending) from each actor's points, combined by
 * `kind` (see `buildChartSections`); `null` at a step where no actor gives a value.
 */
function seriesAt(kind: ChartKind, byActor: ReadonlyMap<string, readonly Point[]>, xs: readonly number[]) {
  const totals: (number | null)[] = xs.map(() => null)
  const add = (i: number, v: number) => {
    totals[i] = (totals[i] ?? 0) + v
  }
  if (kind === ChartKind.counter || kind === ChartKind.delta) {
    // Totals (deltas arrive here as running totals): the highest one at or before each step.
    for (const points of byActor.values()) {
      const sorted = [...points].sort((a, b) => a.x - b.x)
      let j = 0
      let highest = -Infinity
      xs.forEach((x, i) => {
        for (; j < sorted.length && sorted[j]!.x <= x; j++) highest = Math.max(highest, sorted[j]!.v)
        if (highest > -Infinity) add(i, highest)
      })
    }
    return totals
  }
  const index = new Map(xs.map((x, i) => [x, i]))
  const actors = xs.map(() => 0)
  for (const points of byActor.values()) {
    const cells = new Map<number, [number, number]>()
    for (const p of points) {
      const cell = cells.get(p.x) ?? [0, 0]
      cell[0] += p.v
      cell[1] += 1
      cells.set(p.x, cell)
    }
    for (const [x, [sum, n]] of cells) {
      const i = index.get(x)!
      add(i, sum / n)
      actors[i]!++
    }
  }
  // gauges: the mean over actors; rates: their sum
  return kind === ChartKind.rate ? totals : totals.map((t, i) => (t === null ? null : t / actors[i]!))
}

/**
 * Turns metrics lines into chart sections (every key but `UNCHARTED_KEYS`). The x axis is the
 * learner step, except in the areas of `AREA_AXES` (the SFT: its own step). Values combine by the
 * key's `chartKindOf`:
 * - gauges: the reports of one actor (`role:id`) at one step are averaged, then the actors averaged;
 * - rates (`..._per_s`): averaged per actor, then summed (the engines' throughputs add up);
 * - counters (totals since the process started): made continuous across restarts and resumes
 *   (`continuousCounters`); at each step, each actor's highest total reported at that step or an
 *   earlier one, summed over actors (an actor that stopped keeps counting with its last total);
 * - deltas (counts since the previous report): turned into each actor's running total (in file
 *   order), then charted like counters, so `rollout/episodes/<task>` adds up to `rollout/episodes`.
 * Counters and deltas of whole things thus chart as integers, never as an average of totals. A
 * resumed run reports some steps twice; a counter's value there is its newest total.
 */
export function buildChartSections(
  lines: readonly MetricsLine[],
  knownTasks: readonly string[] = [],
): ChartSection[] {
  // key -> actor -> points, in file order
  const acc = new Map<string, Map<string, Point[]>>()
  // key -> actor -> running total of a delta key
  const running = new Map<string, Map<string, number>>()
  const areaOf = (key: string) => (key.includes('/') ? key.slice(0, key.indexOf('/')) : 'other')
  for (const line of continuousCounters(lines).lines) {
    const who = `${line.role}:${line.id}`
    for (const [key, value] of Object.entries(line.values)) {
      if (!Number.isFinite(value) || UNCHARTED_KEYS.has(key)) continue
      const axis = AREA_AXES[areaOf(key)]
      if (axis?.hidden.includes(key)) continue
      const x = axis ? line.values[axis.key] : line.step
      if (x === undefined || !Number.isFinite(x)) continue
      const byActor = acc.get(key) ?? new Map<string, Point[]>()
      acc.set(key, byActor)
      const points = byActor.get(who) ?? []
      byActor.set(who, points)
      if (chartKindOf(key) === ChartKind.delta) {
        const sums = running.get(key) ?? new Map<string, number>()
        running.set(key, sums)
        sums.set(who, (sums.get(who) ?? 0) + value)
        points.push({ x, v: sums.get(who)! })
      } else points.push({ x, v: value })
    }
  }
  const keys = [...acc.keys()].sort()
  const placement = placeKeys(keys, taskNames(lines, knownTasks))
  const charts = new Map<string, { area: string; keys: string[] }>()
  for (const k of keys) {
    const p = placement.get(k)!
    const c = charts.get(p.chart) ?? { area: p.area, keys: [] }
    c.keys.push(k)
    charts.set(p.chart, c)
  }
  const sections = new Map<string, Chart[]>()
  for (const [title, c] of charts) {
    const steps = new Set<number>()
    for (const k of c.keys) for (const points of acc.get(k)!.values()) for (const p of points) steps.add(p.x)
    const x = [...steps].sort((a, b) => a - b)
    const series = c.keys
      .map((key) => ({
        label: placement.get(key)!.label,
        key,
        y: seriesAt(chartKindOf(key), acc.get(key)!, x),
      }))
      .sort((a, b) => (a.label === 'all' ? -1 : b.label === 'all' ? 1 : a.label.localeCompare(b.label)))
    const list = sections.get(c.area) ?? []
    const xLabel = AREA_AXES[c.area]?.label
    list.push(xLabel ? { title, x, xLabel, series } : { title, x, series })
    sections.set(c.area, list)
  }
  const rank = (a: string) => {
    const i = AREA_ORDER.indexOf(a)
    return i < 0 ? AREA_ORDER.length : i
  }
  return [...sections.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([area, list]) => ({ area, charts: list.sort((a, b) => a.title.localeCompare(b.title)) }))
}

/** The newest value of each per-task series: one row per task, one column per chart. */
export interface LatestPerTask {
  /** Chart titles that have a series per task (`rollout/success`, `env/difficulty`, ...). */
  columns: string[]
  rows: { task: string; values: (number | null)[] }[]
}

/** For every chart with per-task series, the last value each task's series has. */
export function latestPerTask(sections: readonly ChartSection[], tasks: ReadonlySet<string>): LatestPerTask {
  const charts = sections.flatMap((s) => s.charts).filter((c) => c.series.some((s) => tasks.has(s.label)))
  const last = (y: readonly (number | null)[]) => {
    for (let i = y.length - 1; i >= 0; i--) if (y[i] !== null) return y[i]!
    return null
  }
  return {
    columns: charts.map((c) => c.title),
    rows: [...tasks].sort().map((task) => ({
      task,
      values: charts.map((c) => {
        const series = c.series.find((s) => s.label === task)
        return series ? last(series.y) : null
      }),
    })),
  }
}
