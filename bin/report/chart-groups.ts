import type { MetricsLine } from '../../actors/index.ts'

/** One line chart: a title, the x values (learner steps) and one y array per series. */
export interface Chart {
  /** Chart id and title: the metric key, or its family (`rollout/success`, `learner/clip_frac_*`). */
  title: string
  /** `[points]` learner steps, ascending. */
  x: number[]
  /** Series by label (task name, `high`/`low`, ...): `[points]`, `null` where the series has no value. */
  series: { label: string; key: string; y: (number | null)[] }[]
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
 * - `area/name/task` (three or more segments): one chart `area/name` with a series per last segment
 *   (`rollout/success/calc` and `rollout/success/sql` share `rollout/success`); a two-segment key
 *   equal to such a chart (`rollout/success`, the overall value) joins it as series `all`;
 * - `area/stem_suffix` keys whose stem is shared by several keys of the area share one chart
 *   `area/stem_*` (`learner/clip_frac_high` and `learner/clip_frac_low` in `learner/clip_frac_*`);
 * - any other key is a chart of its own.
 */
export function placeKeys(keys: readonly string[]): Map<string, Placement> {
  const out = new Map<string, Placement>()
  const deep = new Set<string>()
  for (const k of keys) {
    const segs = k.split('/')
    if (segs.length >= 3) deep.add(segs.slice(0, -1).join('/'))
  }
  const stemCount = new Map<string, number>()
  const stemOf = (name: string) => (name.includes('_') ? name.slice(0, name.lastIndexOf('_')) : undefined)
  for (const k of keys) {
    const segs = k.split('/')
    const stem = segs.length === 2 ? stemOf(segs[1]!) : undefined
    if (stem && !deep.has(k))
      stemCount.set(`${segs[0]}/${stem}`, (stemCount.get(`${segs[0]}/${stem}`) ?? 0) + 1)
  }
  for (const k of keys) {
    const segs = k.split('/')
    const area = segs.length > 1 ? segs[0]! : 'other'
    if (segs.length >= 3) out.set(k, { area, chart: segs.slice(0, -1).join('/'), label: segs.at(-1)! })
    else if (deep.has(k)) out.set(k, { area, chart: k, label: 'all' })
    else if (segs.length === 2) {
      const stem = stemOf(segs[1]!)
      if (stem && (stemCount.get(`${area}/${stem}`) ?? 0) >= 2)
        out.set(k, { area, chart: `${area}/${stem}_*`, label: segs[1]!.slice(stem.length + 1) })
      else out.set(k, { area, chart: k, label: segs[1]! })
    } else out.set(k, { area, chart: k, label: k })
  }
  return out
}

/** True for rate keys (`engine/tokens_per_s`): values of several actors add up. */
export const isRateKey = (key: string) => /_per_s$/.test(key)

/**
 * Turns metrics lines into chart sections. The x axis is the learner step. At one step, the
 * values of one actor (`role:id`) are averaged; the actors' values are then summed for rate keys
 * (`..._per_s`: the engines' throughputs add up) and averaged for every other key.
 */
export function buildChartSections(lines: readonly MetricsLine[]): ChartSection[] {
  // key -> step -> actor -> [sum, count]
  const acc = new Map<string, Map<number, Map<string, [number, number]>>>()
  for (const line of lines) {
    const who = `${line.role}:${line.id}`
    for (const [key, value] of Object.entries(line.values)) {
      if (!Number.isFinite(value)) continue
      const byStep = acc.get(key) ?? new Map<number, Map<string, [number, number]>>()
      acc.set(key, byStep)
      const byActor = byStep.get(line.step) ?? new Map<string, [number, number]>()
      byStep.set(line.step, byActor)
      const cell = byActor.get(who) ?? [0, 0]
      cell[0] += value
      cell[1] += 1
      byActor.set(who, cell)
    }
  }
  const combine = (key: string, byActor: Map<string, [number, number]>) => {
    const perActor = [...byActor.values()].map(([sum, n]) => sum / n)
    const total = perActor.reduce((a, b) => a + b, 0)
    return isRateKey(key) ? total : total / perActor.length
  }
  const keys = [...acc.keys()].sort()
  const placement = placeKeys(keys)
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
    for (const k of c.keys) for (const s of acc.get(k)!.keys()) steps.add(s)
    const x = [...steps].sort((a, b) => a - b)
    const series = c.keys
      .map((key) => {
        const byStep = acc.get(key)!
        return {
          label: placement.get(key)!.label,
          key,
          y: x.map((s) => {
            const byActor = byStep.get(s)
            return byActor ? combine(key, byActor) : null
          }),
        }
      })
      .sort((a, b) => (a.label === 'all' ? -1 : b.label === 'all' ? 1 : a.label.localeCompare(b.label)))
    const list = sections.get(c.area) ?? []
    list.push({ title, x, series })
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
