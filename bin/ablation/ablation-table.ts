import {
  crossedMean,
  type EvalInstance,
  EvaluationStatsError,
  instancesByTask,
  MEAN_TASK,
  sameIndices,
  type TaskInstances,
} from '../../actors/index.ts'
import { BASELINE } from './ablation-plan.ts'

/** What became of one run (a variant at a seed). */
export const AblationRunStatus = { Done: 'done', Failed: 'failed', Missing: 'missing' } as const
export type AblationRunStatus = (typeof AblationRunStatus)[keyof typeof AblationRunStatus]

/** One run of an ablation and its result. */
export interface AblationRun {
  variant: string
  seed: number
  status: AblationRunStatus
  /** The run directory (relative to the ablation's folder). */
  dir: string
  /** Learner step of the evaluated checkpoint (done runs). */
  step?: number
  /** The code of triad the run was made with (`codeVersion`: a git commit, `+dirty`), when recorded. */
  code?: string
  /** The machine it was made on (`machineOf`: `2 x AMD EPYC, 24 GiB`), when recorded (done runs). */
  machine?: string
  /**
   * Wall time of its `triad run`, min (start, RL, the end-of-run evaluation and stop), when
   * recorded (done runs).
   */
  minutes?: number
  /**
   * Wall time of its RL phase, min: from the run's first metrics line to its last learner step's,
   * when recorded (done runs).
   */
  rlMinutes?: number
  /** Why it failed: its exit and the last line it printed (failed runs). */
  reason?: string
  /** The final checkpoint's per-instance results (done runs). */
  instances?: EvalInstance[]
}

/**
 * The done runs grouped by the code they were made with (`code`, or `unrecorded`), in the
 * order each code first appears: a table filled in over sittings may mix commits.
 */
export function doneRunsByCode(runs: readonly AblationRun[]): Map<string, AblationRun[]> {
  const byCode = new Map<string, AblationRun[]>()
  for (const r of runs.filter((run) => run.status === AblationRunStatus.Done)) {
    const code = r.code ?? 'unrecorded'
    byCode.set(code, [...(byCode.get(code) ?? []), r])
  }
  return byCode
}

/** One cell of the table: a variant on one task (or the mean over tasks). */
export interface AblationRow {
  [key: string]: string | number | null
  variant: string
  /** Task, or `mean` for the mean over tasks. */
  task: string
  /** Seeds with a result. */
  seeds: number
  /** Held-out instances per seed. */
  n: number
  /** avg@k over seeds and instances, with its standard error (`crossedMean`); null without a result. */
  avg_at_k: number | null
  avg_at_k_se: number | null
  /** Seeds where both this variant and the baseline have a result. */
  paired_seeds: number
  /**
   * Paired difference to the baseline, `avg@k(variant) - avg@k(baseline)` per seed and instance,
   * averaged, with its standard error over seeds and instances (`crossedMean`); null for the
   * baseline itself and without a paired seed.
   */
  diff: number | null
  diff_se: number | null
}

/** avg@k of each instance of each task of one run, by task name. */
function byTask(run: AblationRun): Map<string, TaskInstances> {
  return new Map(instancesByTask(run.instances ?? []).map((t) => [t.task, t]))
}

/**
 * The table of an ablation: per variant, per task and for the mean over tasks, avg@k with its
 * standard error over seeds and instances, and the paired difference to the baseline (the same
 * seed and the same held-out instances, so a run's luck with its instances cancels out) with its
 * standard error over seeds and instances (both `crossedMean` on the `[seeds][instances]` table;
 * the mean over tasks averages the tasks per instance index first). Failed and missing runs are
 * left out: the counts of seeds say how many each cell has.
 * @throws EvaluationStatsError when two runs of one task were not evaluated on the same instances.
 */
export function ablationTable(
  tasks: readonly string[],
  variants: readonly string[],
  runs: readonly AblationRun[],
): AblationRow[] {
  const done = runs.filter((r) => r.status === AblationRunStatus.Done && r.instances)
  const rowsOf = (variant: string) =>
    new Map(done.filter((r) => r.variant === variant).map((r) => [r.seed, byTask(r)]))
  const base = rowsOf(BASELINE)
  const out: AblationRow[] = []
  for (const variant of variants) {
    const mine = rowsOf(variant)
    const seeds = [...mine.keys()].sort((a, b) => a - b)
    const paired = seeds.filter((s) => base.has(s))
    /** `[seeds][instances]` of `value(seed, index)` for one task or the mean over tasks. */
    const table = (
      over: readonly number[],
      names: readonly string[],
      value: (t: string, s: number, i: number) => number,
    ) => {
      const first = mine.get(over[0]!)!.get(names[0]!)!
      const indices = [...first.avg.keys()].sort((a, b) => a - b)
      for (const s of over)
        for (const t of names) {
          const own = mine.get(s)?.get(t)
          if (!own) throw new EvaluationStatsError(`${variant} seed ${s} has no result of ${t}`)
          sameIndices(first, own, `${variant} seed ${s}`)
          const b = base.get(s)?.get(t)
          if (b && over === paired) sameIndices(own, b, `${variant} vs ${BASELINE} seed ${s}`)
        }
      return over.map((s) =>
        indices.map((i) => names.reduce((acc, t) => acc + value(t, s, i), 0) / names.length),
      )
    }
    const avg = (t: string, s: number, i: number) => mine.get(s)!.get(t)!.avg.get(i)!
    const diff = (t: string, s: number, i: number) => avg(t, s, i) - base.get(s)!.get(t)!.avg.get(i)! // d = avg_v - avg_base
    for (const task of [...tasks, MEAN_TASK]) {
      const names = task === MEAN_TASK ? tasks : [task]
      const row: AblationRow = {
        variant,
        task,
        seeds: seeds.length,
        n: 0,
        avg_at_k: null,
        avg_at_k_se: null,
        paired_seeds: variant === BASELINE ? 0 : paired.length,
        diff: null,
        diff_se: null,
      }
      if (seeds.length > 0) {
        const e = crossedMean(table(seeds, names, avg))
        Object.assign(row, { n: e.instances, avg_at_k: e.mean, avg_at_k_se: e.stderr })
      }
      if (variant !== BASELINE && paired.length > 0) {
        const e = crossedMean(table(paired, names, diff))
        Object.assign(row, { diff: e.mean, diff_se: e.stderr })
      }
      out.push(row)
    }
  }
  return out
}
