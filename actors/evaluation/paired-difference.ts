import { crossedMean } from './crossed-mean.ts'
import { EvaluationStatsError } from './errors.ts'
import type { EvaluationInstance } from './evaluate.ts'

/** The `task` of the row that averages over every task. */
export const MEAN_TASK = 'mean'

/**
 * The paired difference of avg@k between two evaluations of one task (or of the mean over tasks,
 * `task` = `MEAN_TASK`, `difficulty` 0) on the same instances.
 */
export interface PairedDifference {
  [key: string]: string | number
  task: string
  difficulty: number
  /** Instances paired. */
  n: number
  /** Mean over instances of `avg@k(b) - avg@k(a)`. */
  avg_at_k_diff: number
  /** Its standard error: the sample std of the per-instance differences (n - 1) / sqrt(n). */
  avg_at_k_diff_se: number
}

/** One task (at one level) of an evaluation: its instances' avg@k, by index. */
export interface TaskInstances {
  task: string
  difficulty: number
  /** avg@k of each instance, `successes / k`, by its index in the eval split. */
  avg: Map<number, number>
}

/**
 * An evaluation's instances grouped by task and level, in the order the tasks first appear.
 * @throws EvaluationStatsError for an instance listed twice.
 */
export function instancesByTask(instances: readonly EvaluationInstance[]): TaskInstances[] {
  const out = new Map<string, TaskInstances>()
  for (const r of instances) {
    const key = `${r.task}:${r.difficulty}`
    const t = out.get(key) ?? { task: r.task, difficulty: r.difficulty, avg: new Map<number, number>() }
    out.set(key, t)
    if (t.avg.has(r.index))
      throw new EvaluationStatsError(
        `instance ${r.index} of ${r.task} (difficulty ${r.difficulty}) is listed twice`,
      )
    t.avg.set(r.index, r.successes / r.k)
  }
  return [...out.values()]
}

/** The indices of a task's instances, ascending. */
const indicesOf = (t: TaskInstances) => [...t.avg.keys()].sort((x, y) => x - y)

/**
 * Checks that two tasks' instances are the same and returns their indices.
 * @throws EvaluationStatsError naming the task and an instance only one of them has.
 */
export function sameIndices(a: TaskInstances, b: TaskInstances, what: string): number[] {
  const ia = indicesOf(a)
  const ib = indicesOf(b)
  const missing = ia.find((i) => !b.avg.has(i)) ?? ib.find((i) => !a.avg.has(i))
  if (missing !== undefined || ia.length !== ib.length)
    throw new EvaluationStatsError(
      `${what}: ${a.task} (difficulty ${a.difficulty}) was not evaluated on the same instances (instance ${missing} is in only one): a paired difference needs the same instances`,
    )
  return ia
}

/**
 * The paired difference of avg@k of evaluation `b` minus evaluation `a`, both of the same tasks on
 * the same held-out instances (docs/design.md#algorithms, evaluation: paired per instance, then
 * averaged, with its standard error): per task, `d_i = avg@k_b(i) - avg@k_a(i)`, its mean over
 * instances and the standard error `sd(d) / sqrt(n)` (`crossedMean` with one seed). The instances
 * and the seeds they were sampled with are shared, so the instance's own difficulty cancels out and
 * the standard error is that of the change alone, not of two independent means. The last row
 * (`task` `MEAN_TASK`) is the mean over tasks: per instance index the mean of the tasks'
 * differences (every task plays indices `0..n-1`), then its mean and standard error the same way.
 * @throws EvaluationStatsError when the two evaluations' tasks or instances differ.
 */
export function pairedDifference(
  a: readonly EvaluationInstance[],
  b: readonly EvaluationInstance[],
): PairedDifference[] {
  const ta = instancesByTask(a)
  const tb = instancesByTask(b)
  const key = (t: TaskInstances) => `${t.task}:${t.difficulty}`
  const keys = (ts: TaskInstances[]) => ts.map(key).sort().join(', ')
  if (keys(ta) !== keys(tb) || ta.length === 0)
    throw new EvaluationStatsError(
      `the evaluations are of different tasks (${keys(ta) || 'none'} vs ${keys(tb) || 'none'}): a paired difference needs the same tasks and instances`,
    )
  const rows: PairedDifference[] = []
  const perTask: { indices: number[]; d: Map<number, number> }[] = []
  for (const x of ta) {
    const y = tb.find((t) => key(t) === key(x))!
    const indices = sameIndices(x, y, 'paired difference')
    const d = new Map(indices.map((i) => [i, y.avg.get(i)! - x.avg.get(i)!])) // d_i = avg_b(i) - avg_a(i)
    perTask.push({ indices, d })
    const e = crossedMean([indices.map((i) => d.get(i)!)])
    rows.push({
      task: x.task,
      difficulty: x.difficulty,
      n: indices.length,
      avg_at_k_diff: e.mean,
      avg_at_k_diff_se: e.stderr,
    })
  }
  const first = perTask[0]!.indices
  if (perTask.every((t) => t.indices.length === first.length && t.indices.every((i, j) => i === first[j]))) {
    // x_i = mean_t d_{t,i}: the mean over tasks of instance i's differences
    const x = first.map((i) => perTask.reduce((acc, t) => acc + t.d.get(i)!, 0) / perTask.length)
    const e = crossedMean([x])
    rows.push({
      task: MEAN_TASK,
      difficulty: 0,
      n: first.length,
      avg_at_k_diff: e.mean,
      avg_at_k_diff_se: e.stderr,
    })
  }
  return rows
}

/** `  step-67 - sft calc: avg@8 +0.149 ± 0.041 (paired over 32 instances, 3.6 se)`. */
export function pairedDifferenceLine(label: string, k: number | undefined, r: PairedDifference): string {
  const sign = r.avg_at_k_diff >= 0 ? '+' : ''
  const ratio = r.avg_at_k_diff_se > 0 ? `, ${(r.avg_at_k_diff / r.avg_at_k_diff_se).toFixed(1)} se` : ''
  return `  ${label} ${r.task}: avg@${k ?? 'k'} ${sign}${r.avg_at_k_diff.toFixed(3)} ± ${r.avg_at_k_diff_se.toFixed(3)} (paired over ${r.n} instances${ratio})`
}
