import { MetricKind as CatalogKind, metricKeyInfo } from '../../protocols/index.ts'

/**
 * How the report combines a metric's values over time and actors: the catalog's kinds
 * (`protocols/metric-catalog.ts`), a `flag` combined as a gauge. Kinds:
 * - `gauge`: several reports of one actor at a step are averaged, then the actors are averaged;
 * - `rate`: averaged per actor, then summed over actors;
 * - `counter`: a total since the reporting process started, made continuous across restarts and
 *   resumes (`continuousCounters`); each actor's newest total, summed over actors;
 * - `delta`: a count since the actor's previous report, charted as its running total.
 */
export const ChartKind = {
  gauge: CatalogKind.gauge,
  rate: CatalogKind.rate,
  counter: CatalogKind.counter,
  delta: CatalogKind.delta,
} as const
export type ChartKind = (typeof ChartKind)[keyof typeof ChartKind]

/**
 * The kind of a metric key: the catalog's (a flag as a gauge); for a key the catalog does not hold
 * (a custom task's, an older run's) a throughput by its name (`..._per_s`), a restart count
 * (`.../restarts`), else a gauge.
 */
export function chartKindOf(key: string): ChartKind {
  const info = metricKeyInfo(key)
  if (info) return info.kind === CatalogKind.flag ? ChartKind.gauge : info.kind
  if (/_per_s$/.test(key)) return ChartKind.rate
  if (/(^|\/)restarts$/.test(key)) return ChartKind.counter
  return ChartKind.gauge
}
