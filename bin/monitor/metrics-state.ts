import cliProgress from 'cli-progress'
import Table from 'cli-table3'
import type { MetricsLine } from '../../actors/index.ts'

/** The newest value of each metric key, per reporting actor (`role:id`). */
export class MetricsState {
  private readonly latest = new Map<string, Map<string, number>>()
  /** Highest learner step seen. */
  step = 0
  /** Reports received. */
  reports = 0
  /** Wall-clock time of the first and the newest report, ms since the epoch. */
  firstTime?: number
  lastTime?: number

  add(line: MetricsLine): void {
    this.reports++
    this.step = Math.max(this.step, line.step)
    this.firstTime = Math.min(this.firstTime ?? line.time, line.time)
    this.lastTime = Math.max(this.lastTime ?? line.time, line.time)
    const who = `${line.role}:${line.id}`
    for (const [key, value] of Object.entries(line.values)) {
      if (!Number.isFinite(value)) continue
      const byActor = this.latest.get(key) ?? new Map<string, number>()
      this.latest.set(key, byActor)
      byActor.set(who, value)
    }
  }

  /** Every key seen, sorted. */
  keys(): string[] {
    return [...this.latest.keys()].sort()
  }

  /** The newest value of `key` per actor, combined over actors: `mean` (default) or `sum`. */
  value(key: string, combine: 'mean' | 'sum' = 'mean'): number | undefined {
    const byActor = this.latest.get(key)
    if (!byActor || byActor.size === 0) return undefined
    const sum = [...byActor.values()].reduce((a, b) => a + b, 0)
    return combine === 'sum' ? sum : sum / byActor.size
  }

  /** Tasks named by per-task keys of these families (`rollout/success/<task>`, ...), sorted. */
  tasks(families: readonly string[]): string[] {
    const out = new Set<string>()
    for (const key of this.latest.keys())
      for (const f of families)
        if (key.startsWith(`${f}/`) && !key.slice(f.length + 1).includes('/'))
          out.add(key.slice(f.length + 1))
    return [...out].sort()
  }
}

/**
 * Metric keys the monitor shows. `run/max_steps` (published by the run) sets the progress bar's
 * end when `--max-steps` is not given; every key ending in `/restarts` counts actor restarts.
 */
export const MonitorKeys = {
  success: 'rollout/success',
  reward: 'rollout/reward',
  difficulty: 'env/difficulty',
  tokensPerS: 'engine/tokens_per_s',
  stalenessMean: 'pipeline/staleness_mean',
  stalenessMax: 'pipeline/staleness_max',
  /** The first of these present is the loss column. */
  loss: ['learner/loss', 'learner/loss/total', 'learner/policy/loss'],
  maxSteps: 'run/max_steps',
} as const

const fmt = (v: number | undefined, digits = 3) =>
  v === undefined ? '-' : Math.abs(v) >= 1000 ? v.toFixed(0) : v.toFixed(digits)

/** Options of `renderSnapshot`. */
export interface SnapshotOptions {
  run: string
  /** End of the progress bar, learner steps (default: the `run/max_steps` metric, else none). */
  maxSteps?: number
  /** Characters of the bar (default 30). */
  barSize?: number
  /**
   * Actor restarts of the run's services (`$SRV.STATS` data `restarts`, summed), when known;
   * otherwise every metric key ending in `/restarts` is summed.
   */
  serviceRestarts?: number
}

/**
 * Renders one terminal snapshot: a progress bar of learner steps, a table of success, reward and
 * difficulty per task, and a line of tokens/s (summed over engines), staleness, loss and actor
 * restarts. Plain text without colours.
 */
export function renderSnapshot(state: MetricsState, options: SnapshotOptions): string {
  const maxSteps = options.maxSteps ?? state.value(MonitorKeys.maxSteps, 'mean')
  const barsize = options.barSize ?? 30
  const lines: string[] = []
  if (maxSteps && maxSteps > 0) {
    const progress = Math.min(1, state.step / maxSteps)
    const bar = cliProgress.Format.BarFormat(progress, {
      barsize,
      barCompleteString: '\u2588'.repeat(barsize),
      barIncompleteString: '\u2591'.repeat(barsize),
      barGlue: '',
    } as never)
    lines.push(`run ${options.run}  ${bar} ${Math.round(progress * 100)}%  step ${state.step}/${maxSteps}`)
  } else lines.push(`run ${options.run}  step ${state.step}`)

  const tasks = state.tasks([MonitorKeys.success, MonitorKeys.reward, MonitorKeys.difficulty])
  const table = new Table({
    head: ['task', 'success', 'reward', 'difficulty'],
    style: { head: [], border: [], compact: true },
    colAligns: ['left', 'right', 'right', 'right'],
  })
  for (const t of tasks)
    table.push([
      t,
      fmt(state.value(`${MonitorKeys.success}/${t}`)),
      fmt(state.value(`${MonitorKeys.reward}/${t}`)),
      fmt(state.value(`${MonitorKeys.difficulty}/${t}`), 0),
    ])
  if (tasks.length) lines.push(table.toString())
  else lines.push('(no per-task metrics yet)')

  const restartKeys = state.keys().filter((k) => k.endsWith('/restarts'))
  const restarts =
    options.serviceRestarts ??
    (restartKeys.length ? restartKeys.reduce((n, k) => n + (state.value(k, 'sum') ?? 0), 0) : undefined)
  const lossKey = MonitorKeys.loss.find((k) => state.value(k) !== undefined)
  const stats = new Table({
    head: ['tokens/s', 'staleness mean', 'staleness max', 'loss', 'restarts', 'reports'],
    style: { head: [], border: [], compact: true },
  })
  stats.push([
    fmt(state.value(MonitorKeys.tokensPerS, 'sum'), 1),
    fmt(state.value(MonitorKeys.stalenessMean), 2),
    fmt(state.value(MonitorKeys.stalenessMax), 0),
    fmt(lossKey ? state.value(lossKey) : undefined, 4),
    restarts === undefined ? '-' : String(restarts),
    String(state.reports),
  ])
  lines.push(stats.toString())
  return `${lines.join('\n')}\n`
}
