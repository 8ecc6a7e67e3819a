import { MetricPanel, metricKeyInfo } from '../../protocols/index.ts'
import type { Chart, ChartSection } from './chart-groups.ts'

/**
 * The report's layout as a dashboard: first the panels a user looks for (held-out evaluation,
 * training reward and success, the policy update, the reward model, difficulty, throughput and
 * staleness), then every other metric under its namespace (folded), where a metric whose values
 * never change is listed instead of drawn. Several runs are overlaid: one chart per metric with a
 * line per run and task. A task has one colour in every chart; a run has one dash pattern.
 */

/** Series colours: saturated, so the page's self-check can tell a drawn line from axes and grid. */
export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#17becf',
  '#e377c2',
  '#8c564b',
  '#bcbd22',
  '#0047ab',
]

/**
 * Colours of the series that are not a task's (`all`, `high`/`low`, a chart's one line), by their
 * place among a chart's such series: none is a task colour, so a task's colour means that task.
 */
export const OTHER_COLOURS = ['#404040', '#a0522d', '#556b2f', '#8b008b', '#008080', '#b8860b']

/** Dash patterns of the runs of an overlay, in the order given (the first run solid), px. */
export const RUN_DASHES: readonly number[][] = [[], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4]]

/** One line of a dashboard chart. */
export interface DashboardSeries {
  label: string
  /** The metric key (or `eval/<metric>@<k>/<task>`). */
  key: string
  /** The run it belongs to. */
  run: string
  /** `[points]` values at the chart's x, null where the series has none. */
  y: (number | null)[]
  /** `[points]` standard errors drawn as error bars (evaluation charts). */
  se?: (number | null)[]
  colour: string
  /** Canvas dash pattern, px; empty for a solid line. */
  dash: number[]
}

/** One chart of the dashboard. */
export interface DashboardChart {
  id: string
  title: string
  x: number[]
  xLabel?: string
  series: DashboardSeries[]
  /** Unit of every key of the chart (from the catalog), when they share one. */
  unit?: string
  /** What the chart's keys mean (from the catalog). */
  meaning?: string
  /** Drawn smoothed by the page's smoothing control (raw values faint behind). */
  smooth?: boolean
  /**
   * The x range drawn, `[first, last]` learner step: the same for every chart on the learner's
   * steps (the runs' first to last step), so a step is at one place in all of them. Absent for
   * charts on another axis (`xLabel`: the SFT's steps).
   */
  xRange?: [number, number]
}

/** A metric whose values never change, listed instead of drawn. */
export interface ConstantMetric {
  key: string
  run: string
  value: number
}

/** A group of charts: a panel of the dashboard or a namespace. */
export interface DashboardSection {
  id: string
  title: string
  charts: DashboardChart[]
  /** Metrics listed instead of drawn (namespaces only). */
  constants: ConstantMetric[]
  /** Folded (namespaces) or open (panels). */
  folded: boolean
}

/**
 * The headline charts the report opens with, each the first chart found of its kind: held-out
 * avg@k over steps, training success per task, throughput.
 */
export const HEADLINE_CHARTS: readonly { panel: string; title: (title: string) => boolean }[] = [
  { panel: 'evaluation', title: (t) => t.startsWith('eval/avg@') },
  { panel: 'training', title: (t) => t === 'rollout/success' },
  { panel: 'throughput', title: (t) => t === 'engine/tokens_per_s' || t === 'rollout/tokens_per_s' },
]

/** The id of the section of headline charts (`HEADLINE_CHARTS`), first on the page. */
export const HEADLINE_SECTION = 'headline'

/** The panels in the order shown; `evaluation` holds the held-out charts. */
export const PANELS: readonly { id: string; title: string; panels: readonly MetricPanel[] }[] = [
  {
    id: 'evaluation',
    title: 'held-out evaluation (avg@k and pass@k per task, ± 1 standard error)',
    panels: [],
  },
  { id: 'training', title: 'training reward and success per task', panels: [MetricPanel.training] },
  {
    id: 'policy',
    title: 'policy update: loss, clip fractions, KL and entropy',
    panels: [MetricPanel.policy],
  },
  { id: 'reward-model', title: "the reward model's accuracy", panels: [MetricPanel.rewardModel] },
  { id: 'difficulty', title: 'difficulty per task', panels: [MetricPanel.difficulty] },
  {
    id: 'throughput',
    title: 'throughput and staleness',
    panels: [MetricPanel.throughput, MetricPanel.staleness],
  },
]

/** One run's charts: its metric sections and its evaluation charts. */
export interface RunCharts {
  runId: string
  sections: readonly ChartSection[]
  evalCharts: readonly Chart[]
}

/** The panel of a chart: the catalog panel of its first key that has one (namespace otherwise). */
function panelOf(chart: Chart): MetricPanel {
  for (const s of chart.series) {
    const info = metricKeyInfo(s.key)
    if (info) return info.panel
  }
  return MetricPanel.namespace
}

/**
 * Each series' one value (its mean) when no series of the chart changes (nulls aside) by more than
 * float32 rounding: max - min <= 1e-6 max(1, |max|); else undefined.
 */
function constantValues(chart: Chart): number[] | undefined {
  const out: number[] = []
  for (const s of chart.series) {
    const ys = s.y.filter((v): v is number => v !== null)
    if (ys.length === 0) return undefined
    const lo = Math.min(...ys)
    const hi = Math.max(...ys)
    if (hi - lo > 1e-6 * Math.max(1, Math.abs(hi))) return undefined
    out.push(ys.reduce((a, v) => a + v, 0) / ys.length)
  }
  return out
}

/**
 * The colours of a chart's series labels: a task's colour (its place in `tasks`) for a task, else
 * `OTHER_COLOURS` by the label's place among the chart's labels that are not tasks.
 */
function coloursOf(labels: readonly string[], tasks: readonly string[]): Map<string, string> {
  const out = new Map<string, string>()
  const others = [...new Set(labels.filter((l) => !tasks.includes(l)))]
  for (const l of labels) {
    const t = tasks.indexOf(l)
    out.set(
      l,
      t >= 0 ? PALETTE[t % PALETTE.length]! : OTHER_COLOURS[others.indexOf(l) % OTHER_COLOURS.length]!,
    )
  }
  return out
}

/**
 * Charts of the same title from several runs as one chart: x is the union of their steps, each
 * run's series re-indexed on it; with more than one run a series is labelled `<label> · <run>`.
 */
function overlay(
  parts: readonly { run: string; runIndex: number; chart: Chart }[],
  tasks: readonly string[],
  several: boolean,
): Omit<DashboardChart, 'id'> {
  const first = parts[0]!.chart
  const colours = coloursOf(
    parts.flatMap((p) => p.chart.series.map((s) => s.label)),
    tasks,
  )
  const x = [...new Set(parts.flatMap((p) => p.chart.x))].sort((a, b) => a - b)
  const at = new Map(x.map((v, i) => [v, i]))
  const series: DashboardSeries[] = []
  for (const { run, runIndex, chart } of parts)
    for (const s of chart.series) {
      const y: (number | null)[] = x.map(() => null)
      const se: (number | null)[] = x.map(() => null)
      chart.x.forEach((v, i) => {
        y[at.get(v)!] = s.y[i] ?? null
        se[at.get(v)!] = s.se?.[i] ?? null
      })
      series.push({
        label: several ? `${s.label} · ${run}` : s.label,
        key: s.key,
        run,
        y,
        ...(s.se ? { se } : {}),
        colour: colours.get(s.label)!,
        dash: RUN_DASHES[runIndex % RUN_DASHES.length]!,
      })
    }
  const infos = first.series.map((s) => metricKeyInfo(s.key))
  const units = new Set(infos.map((i) => i?.unit))
  const unit = units.size === 1 ? [...units][0] : undefined
  const meaning = infos.find((i) => i !== undefined)?.meaning
  return {
    title: first.title,
    x,
    ...(first.xLabel ? { xLabel: first.xLabel } : {}),
    series,
    ...(unit ? { unit } : {}),
    ...(meaning ? { meaning } : {}),
  }
}

/**
 * The dashboard of one run or an overlay of several: the headline charts (`HEADLINE_CHARTS`, moved
 * out of their panels), the panels of `PANELS` (the evaluation charts first; a metric chart goes to
 * the panel of its keys in the metric-key catalog), then one folded section per namespace (area)
 * with the remaining charts, a chart whose values are all one number listed as a constant instead.
 * Sections without charts are left out. Every chart on the learner's steps gets the same `xRange`.
 * @param tasks every task of the runs, sorted: a task's colour is its place here.
 */
export function buildDashboard(runs: readonly RunCharts[], tasks: readonly string[]): DashboardSection[] {
  const several = runs.length > 1
  // title -> the charts of that title across runs, with where they go
  const byTitle = new Map<
    string,
    { place: string; area: string; parts: { run: string; runIndex: number; chart: Chart }[] }
  >()
  const order: string[] = []
  runs.forEach((r, runIndex) => {
    const add = (chart: Chart, place: string, area: string) => {
      const entry = byTitle.get(chart.title) ?? { place, area, parts: [] }
      if (!byTitle.has(chart.title)) {
        byTitle.set(chart.title, entry)
        order.push(chart.title)
      }
      entry.parts.push({ run: r.runId, runIndex, chart })
    }
    for (const c of r.evalCharts) add(c, 'evaluation', 'eval')
    for (const s of r.sections)
      for (const c of s.charts) {
        const panel = panelOf(c)
        const place = PANELS.find((p) => p.panels.includes(panel))?.id ?? `ns:${s.area}`
        add(c, place, s.area)
      }
  })
  let n = 0
  const sections: DashboardSection[] = PANELS.map((p) => ({
    id: p.id,
    title: p.title,
    charts: [],
    constants: [],
    folded: false,
  }))
  const namespaces = new Map<string, DashboardSection>()
  for (const title of order) {
    const { place, area, parts } = byTitle.get(title)!
    const panel = sections.find((s) => s.id === place)
    if (panel) {
      panel.charts.push({
        id: `chart-${n++}`,
        ...overlay(parts, tasks, several),
        ...(place === 'training' ? { smooth: true } : {}),
      })
      continue
    }
    const ns = namespaces.get(area) ?? {
      id: `ns-${area}`,
      title: area,
      charts: [],
      constants: [],
      folded: true,
    }
    namespaces.set(area, ns)
    const constant = parts.map((p) => constantValues(p.chart))
    if (constant.every((v) => v !== undefined))
      for (const [i, p] of parts.entries())
        p.chart.series.forEach((s, j) => {
          ns.constants.push({ key: s.key, run: p.run, value: constant[i]![j]! })
        })
    else ns.charts.push({ id: `chart-${n++}`, ...overlay(parts, tasks, several) })
  }
  // One x range for every chart on the learner's steps: the runs' first to last step.
  const stepCharts = [...sections, ...namespaces.values()].flatMap((s) => s.charts).filter((c) => !c.xLabel)
  const xs = stepCharts.flatMap((c) => (c.x.length ? [c.x[0]!, c.x.at(-1)!] : []))
  if (xs.length) {
    const range: [number, number] = [Math.min(...xs), Math.max(...xs)]
    for (const c of stepCharts) c.xRange = range
  }
  // The headline charts move to a section of their own, first.
  const headline: DashboardSection = {
    id: HEADLINE_SECTION,
    title: 'headline: held-out avg@k, training success, throughput',
    charts: [],
    constants: [],
    folded: false,
  }
  for (const h of HEADLINE_CHARTS) {
    const panel = sections.find((s) => s.id === h.panel)
    const at = panel?.charts.findIndex((c) => h.title(c.title)) ?? -1
    if (panel && at >= 0) headline.charts.push(...panel.charts.splice(at, 1))
  }
  return [
    ...[headline, ...sections].filter((s) => s.charts.length > 0),
    ...[...namespaces.values()].filter((s) => s.charts.length + s.constants.length > 0),
  ]
}
