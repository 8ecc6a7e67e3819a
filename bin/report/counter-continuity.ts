import type { MetricsLine } from '../../actors/index.ts'
import { ChartKind, chartKindOf } from './metric-kinds.ts'

/** One restart of an actor seen in its counters. */
export interface CounterReset {
  /** The actor, `role:id`. */
  actor: string
  /** Index in the lines of its first report after the restart. */
  line: number
  /** Learner step of that report. */
  step: number
}

/**
 * Makes counters (totals since their process started, `chartKindOf` `counter`) continuous across
 * restarts of the process, a resumed run included: an actor (`role:id`) restarted at a report
 * where any of its counters is lower than in its previous report; from that report on, each of its
 * counters has its last value before the restart added (for every segment so far), keys missing
 * from that report included. Lines are taken in file order (the order they arrived in), and each
 * actor is assumed to be one process at a time. A restart whose first report already exceeds
 * every previous total cannot be seen and is not corrected.
 * @param isCounter which keys are counters (default: `chartKindOf(key) === 'counter'`).
 * @returns new lines (the input is not changed; lines without counters are the same objects) and
 *   the restarts found.
 * @example
 * // episodes 5, 9, then a resume: 2, 4  ->  5, 9, 11, 13
 */
export function continuousCounters(
  lines: readonly MetricsLine[],
  isCounter: (key: string) => boolean = (key) => chartKindOf(key) === ChartKind.counter,
): { lines: MetricsLine[]; resets: CounterReset[] } {
  // actor -> key -> [last value in the current segment, sum of the previous segments' last values]
  const state = new Map<string, Map<string, [number, number]>>()
  const resets: CounterReset[] = []
  const out = lines.map((line, i) => {
    const counters = Object.entries(line.values).filter(([k, v]) => isCounter(k) && Number.isFinite(v))
    if (counters.length === 0) return line
    const actor = `${line.role}:${line.id}`
    const byKey = state.get(actor) ?? new Map<string, [number, number]>()
    state.set(actor, byKey)
    if (counters.some(([k, v]) => v < (byKey.get(k)?.[0] ?? 0))) {
      resets.push({ actor, line: i, step: line.step })
      for (const cell of byKey.values()) {
        cell[1] += cell[0]
        cell[0] = 0
      }
    }
    const values = { ...line.values }
    for (const [k, v] of counters) {
      const cell = byKey.get(k) ?? [0, 0]
      byKey.set(k, cell)
      cell[0] = v
      values[k] = v + cell[1]
    }
    return { ...line, values }
  })
  return { lines: out, resets }
}
