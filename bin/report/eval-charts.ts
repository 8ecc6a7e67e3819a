import type { EvalResult } from '../../actors/index.ts'
import type { Chart } from './chart-groups.ts'

/**
 * The learner step a row of an evaluation file measured: its `checkpoint` column when it names one
 * (`sft` is the weights of step 0, `step-<n>` those of step n), else the file's `step`.
 */
export function evalRowStep(row: EvalResult['rows'][number], file: EvalResult): number | undefined {
  const c = row.checkpoint
  if (c === 'sft') return 0
  if (typeof c === 'string') {
    const m = /(?:^|\/)step-0*(\d+)$/.exec(c)
    if (m) return Number(m[1])
  }
  return file.step
}

/**
 * Charts of the held-out evaluations over learner steps: `eval/avg@<k>` and `eval/pass@<k>`, one
 * series per task (rows of one task at one step, several difficulties or files, are averaged),
 * with the standard error of each value (`avg_at_k_se`, `pass_at_k_se`; of an average of m rows,
 * sqrt(sum se^2) / m; null when a row has none). Rows come from every evaluation file (the
 * periodic `step-<n>.json` and the final table, whose SFT row is step 0). A value of `k` with
 * fewer than `minSteps` evaluated steps gives no chart.
 */
export function evalCharts(evals: readonly { result: EvalResult }[], minSteps = 2): Chart[] {
  // k -> metric -> task -> step -> [sum, count, sum of squared standard errors, rows with one]
  const acc = new Map<number, Map<string, Map<string, Map<number, [number, number, number, number]>>>>()
  for (const { result } of evals)
    for (const row of result.rows) {
      const step = evalRowStep(row, result)
      const k = typeof row.k === 'number' ? row.k : result.k
      if (step === undefined || k === undefined || typeof row.task !== 'string') continue
      for (const metric of ['avg', 'pass'] as const) {
        const v = row[`${metric}_at_k`]
        if (typeof v !== 'number' || !Number.isFinite(v)) continue
        const byMetric = acc.get(k) ?? new Map()
        acc.set(k, byMetric)
        const byTask = byMetric.get(metric) ?? new Map()
        byMetric.set(metric, byTask)
        const bySteps = byTask.get(row.task) ?? new Map<number, [number, number, number, number]>()
        byTask.set(row.task, bySteps)
        const cell = bySteps.get(step) ?? [0, 0, 0, 0]
        cell[0] += v
        cell[1] += 1
        const se = row[`${metric}_at_k_se`]
        if (typeof se === 'number' && Number.isFinite(se)) {
          cell[2] += se * se
          cell[3] += 1
        }
        bySteps.set(step, cell)
      }
    }
  const charts: Chart[] = []
  for (const k of [...acc.keys()].sort((a, b) => a - b))
    for (const metric of ['avg', 'pass'] as const) {
      const byTask = acc.get(k)!.get(metric)
      if (!byTask) continue
      const steps = new Set<number>()
      for (const bySteps of byTask.values()) for (const s of bySteps.keys()) steps.add(s)
      if (steps.size < minSteps) continue
      const x = [...steps].sort((a, b) => a - b)
      charts.push({
        title: `eval/${metric}@${k}`,
        x,
        series: [...byTask.keys()].sort().map((task) => ({
          label: task,
          key: `eval/${metric}@${k}/${task}`,
          y: x.map((s) => {
            const cell = byTask.get(task)!.get(s)
            return cell ? cell[0] / cell[1] : null
          }),
          // The standard error of a mean of m independent rows: sqrt(sum se_i^2) / m.
          se: x.map((s) => {
            const cell = byTask.get(task)!.get(s)
            return cell && cell[3] === cell[1] ? Math.sqrt(cell[2]) / cell[1] : null
          }),
        })),
      })
    }
  return charts
}
