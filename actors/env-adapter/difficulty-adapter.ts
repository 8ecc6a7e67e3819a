import { ConfigError } from '../../gpu/index.ts'
import type {
  EnvDifficulty,
  MetricValues,
  PayloadOf,
  TaskDifficulty,
  Trajectory,
} from '../../protocols/index.ts'

/**
 * Task adaptation (RLAnything, arXiv 2602.02488; docs/design.md#algorithms, dynamic triad): the
 * policy's accuracy on each task instance over a window of episodes makes it harder
 * (accuracy >= 0.8) or easier (< 0.2); a changed instance is kept only if, over its next window, it
 * still has some successes and its accuracy moved the intended way while staying inside [0.2, 0.8];
 * otherwise the change is dropped and the instance goes back to its previous level.
 *
 * Only episodes played at the instance's current level count (episodes started before a change are
 * ignored). After every decision the window starts empty, so a dropped change is tried again at the
 * earliest one full window later.
 */

/** What the accuracy is kept for. Closed set. */
export const AdaptGranularity = {
  /** One level per task instance (`task` + instance index): a distribution of levels per task. */
  Instance: 'instance',
  /** One level per task, for rollouts that draw fresh instances every time. */
  Task: 'task',
} as const
export type AdaptGranularity = (typeof AdaptGranularity)[keyof typeof AdaptGranularity]

/** Integer difficulty levels of a task: `min..max`, `default` for instances never changed. */
export interface TaskLevels {
  min: number
  max: number
  default: number
}

/** Settings of the adapter. */
export interface DifficultyAdapterConfig {
  /** Levels of every task it adapts; episodes of other tasks are ignored. */
  tasks: Record<string, TaskLevels>
  /** Episodes per accuracy measurement (>= 1); default 8 (one group of G = 8). */
  window?: number
  /** Accuracy at or above which a level is raised; default 0.8. */
  raiseAt?: number
  /** Accuracy below which a level is lowered; default 0.2. */
  lowerAt?: number
  /** Default `instance`. */
  granularity?: AdaptGranularity
  /** False: accuracy is measured and reported, levels never change (the `adaptiveTasks` switch). */
  enabled?: boolean
}

/** A decision about one instance. Closed set. */
export const AdaptAction = {
  /** Mastered: moved one level up, on trial. */
  Raised: 'raised',
  /** Failed: moved one level down, on trial. */
  Lowered: 'lowered',
  /** A trial change passed the acceptance rule and stays. */
  Accepted: 'accepted',
  /** A trial change broke the acceptance rule: back to the previous level. */
  Dropped: 'dropped',
} as const
export type AdaptAction = (typeof AdaptAction)[keyof typeof AdaptAction]

/** One decision, for logs and tests. */
export interface AdaptDecision {
  task: string
  /** Instance key: the index as a decimal string, or `*` with per-task granularity. */
  instance: string
  action: AdaptAction
  /** Level before and after the decision. */
  from: number
  to: number
  /** Accuracy of the window that decided. */
  accuracy: number
}

interface Trial {
  /** The level before the change. */
  from: number
  /** +1 raised, -1 lowered. */
  direction: 1 | -1
  /** Accuracy at `from` that triggered the change. */
  baseline: number
}

interface InstanceState {
  level: number
  /** Outcomes (1 success, 0 failure) at `level`, oldest first, at most `window`. */
  outcomes: number[]
  trial?: Trial
  /** Accuracy of the last full window (NaN before the first). */
  lastAccuracy: number
}

/** Counters of every decision since start. */
export interface AdaptCounts {
  raised: number
  lowered: number
  accepted: number
  dropped: number
}

/** One episode's result as the adapter needs it. */
export interface EpisodeResult {
  task: string
  /** Instance index within the task's split. */
  index: number
  /** Level it was played at. */
  difficulty: number
  success: boolean
}

/**
 * Success of a trajectory: its `success` metric when the task reports one, else outcome reward > 0.
 */
export function trajectorySuccess(t: Pick<Trajectory, 'reward' | 'metrics'>): boolean {
  const s = t.metrics.success
  return s !== undefined ? s > 0 : t.reward > 0
}

/** The accuracy-driven difficulty of every task instance. */
export class DifficultyAdapter {
  readonly window: number
  readonly raiseAt: number
  readonly lowerAt: number
  readonly granularity: AdaptGranularity
  readonly enabled: boolean
  private readonly tasks: Record<string, TaskLevels>
  private readonly states = new Map<string, Map<string, InstanceState>>()
  private readonly counts: AdaptCounts = { raised: 0, lowered: 0, accepted: 0, dropped: 0 }
  private revisionCounter = 0

  /** @throws ConfigError on a bad window, thresholds or levels. */
  constructor(config: DifficultyAdapterConfig) {
    this.window = config.window ?? 8
    this.raiseAt = config.raiseAt ?? 0.8
    this.lowerAt = config.lowerAt ?? 0.2
    this.granularity = config.granularity ?? AdaptGranularity.Instance
    this.enabled = config.enabled ?? true
    if (!Number.isInteger(this.window) || this.window < 1)
      throw new ConfigError('window', this.window, 'must be an integer >= 1')
    if (!(this.lowerAt >= 0 && this.lowerAt < this.raiseAt && this.raiseAt <= 1))
      throw new ConfigError('raiseAt', [this.lowerAt, this.raiseAt], 'need 0 <= lowerAt < raiseAt <= 1')
    if (!Object.values(AdaptGranularity).includes(this.granularity))
      throw new ConfigError(
        'granularity',
        this.granularity,
        `one of ${Object.values(AdaptGranularity).join(', ')}`,
      )
    for (const [task, l] of Object.entries(config.tasks)) {
      if (![l.min, l.max, l.default].every(Number.isInteger) || l.min > l.default || l.default > l.max)
        throw new ConfigError(`tasks.${task}`, l, 'need integers min <= default <= max')
    }
    this.tasks = { ...config.tasks }
  }

  /** Increases with every level change (the `revision` of `env.difficulty`). */
  get revision(): number {
    return this.revisionCounter
  }

  private key(index: number): string {
    return this.granularity === AdaptGranularity.Task ? '*' : String(index)
  }

  private state(task: string, instance: string): InstanceState {
    const byInstance = this.states.get(task) ?? new Map<string, InstanceState>()
    this.states.set(task, byInstance)
    const s = byInstance.get(instance) ?? {
      level: this.tasks[task]!.default,
      outcomes: [],
      lastAccuracy: Number.NaN,
    }
    byInstance.set(instance, s)
    return s
  }

  /** Current level of an instance (its task's default when never changed; undefined for an unknown task). */
  levelOf(task: string, index: number): number | undefined {
    const levels = this.tasks[task]
    if (!levels) return undefined
    return this.states.get(task)?.get(this.key(index))?.level ?? levels.default
  }

  /**
   * Records one episode; returns the decision it caused, if any.
   * Episodes of unknown tasks, or played at another level than the instance's current one, are ignored.
   */
  record(result: EpisodeResult): AdaptDecision | undefined {
    const levels = this.tasks[result.task]
    if (!levels) return undefined
    const instance = this.key(result.index)
    const s = this.state(result.task, instance)
    if (result.difficulty !== s.level) return undefined
    s.outcomes.push(result.success ? 1 : 0)
    if (s.outcomes.length > this.window) s.outcomes.shift()
    if (s.outcomes.length < this.window) return undefined
    const successes = s.outcomes.reduce((a, b) => a + b, 0)
    const accuracy = successes / this.window
    s.lastAccuracy = accuracy
    const decide = (action: AdaptAction, to: number): AdaptDecision => {
      const d = { task: result.task, instance, action, from: s.level, to, accuracy }
      if (to !== s.level) this.revisionCounter++
      s.level = to
      s.outcomes = []
      this.counts[action]++
      return d
    }
    if (s.trial) {
      const t = s.trial
      s.trial = undefined
      const moved = t.direction > 0 ? accuracy < t.baseline : accuracy > t.baseline
      const inside = accuracy >= this.lowerAt && accuracy <= this.raiseAt
      // Kept only with some successes, accuracy moved the intended way, and inside [0.2, 0.8].
      if (successes > 0 && moved && inside) return decide(AdaptAction.Accepted, s.level)
      return decide(AdaptAction.Dropped, t.from)
    }
    if (!this.enabled) return undefined
    if (accuracy >= this.raiseAt && s.level < levels.max) {
      s.trial = { from: s.level, direction: 1, baseline: accuracy }
      return decide(AdaptAction.Raised, s.level + 1)
    }
    if (accuracy < this.lowerAt && s.level > levels.min) {
      s.trial = { from: s.level, direction: -1, baseline: accuracy }
      return decide(AdaptAction.Lowered, s.level - 1)
    }
    return undefined
  }

  /** Records every sample of a `trajectory.group`; returns the decisions in order. */
  recordGroup(group: {
    task: string
    index: number
    difficulty: number
    samples: readonly Pick<Trajectory, 'reward' | 'metrics'>[]
  }): AdaptDecision[] {
    const out: AdaptDecision[] = []
    for (const sample of group.samples) {
      const d = this.record({
        task: group.task,
        index: group.index,
        difficulty: group.difficulty,
        success: trajectorySuccess(sample),
      })
      if (d) out.push(d)
    }
    return out
  }

  /** Decision counters since start. */
  decisionCounts(): AdaptCounts {
    return { ...this.counts }
  }

  /** The payload of `env.difficulty`: per task, its default and every instance whose level differs. */
  difficulty(): PayloadOf<typeof EnvDifficulty> {
    const tasks: Record<string, TaskDifficulty> = {}
    for (const [task, l] of Object.entries(this.tasks)) {
      const byInstance = this.states.get(task)
      if (this.granularity === AdaptGranularity.Task) {
        tasks[task] = { default: byInstance?.get('*')?.level ?? l.default, levels: {} }
        continue
      }
      const levels: Record<string, number> = {}
      for (const [instance, s] of byInstance ?? []) if (s.level !== l.default) levels[instance] = s.level
      tasks[task] = { default: l.default, levels }
    }
    return { revision: this.revisionCounter, adaptive: this.enabled, tasks }
  }

  /**
   * Metric values (keys under `env/`):
   * - `env/difficulty/<task>`: mean level over the task's tracked instances (its default when none);
   * - `env/difficulty/<task>/level_<d>`: share of the task's tracked instances at level d, for every
   *   level of the task (the histogram; all zero when none is tracked);
   * - `env/accuracy/<task>`: mean accuracy of the instances' last full windows (absent before one);
   * - `env/instances/<task>`: tracked instances;
   * - `env/adapter/{raised,lowered,accepted,dropped}`: decisions since start;
   * - `env/adapter/enabled`: 1 when levels may change, 0 when the switch is off.
   */
  metrics(): MetricValues {
    const out: MetricValues = {}
    for (const [task, l] of Object.entries(this.tasks)) {
      const states = [...(this.states.get(task)?.values() ?? [])]
      const n = states.length
      out[`env/difficulty/${task}`] = n ? states.reduce((a, s) => a + s.level, 0) / n : l.default
      for (let d = l.min; d <= l.max; d++)
        out[`env/difficulty/${task}/level_${d}`] = n ? states.filter((s) => s.level === d).length / n : 0
      const measured = states.filter((s) => !Number.isNaN(s.lastAccuracy))
      if (measured.length)
        out[`env/accuracy/${task}`] = measured.reduce((a, s) => a + s.lastAccuracy, 0) / measured.length
      out[`env/instances/${task}`] = n
    }
    for (const [k, v] of Object.entries(this.counts)) out[`env/adapter/${k}`] = v
    out['env/adapter/enabled'] = this.enabled ? 1 : 0
    return out
  }
}
