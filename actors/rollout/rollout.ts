import { setMaxListeners } from 'node:events'
import { createRng } from '../../gpu/index.ts'
import type { ChatMessage, MetricValues, Trajectory, TrajectoryGroupPayload } from '../../protocols/index.ts'
import { annotateSeedOf, episodeSeeds, sleep, systemClock } from '../runtime/index.ts'
import { type EpisodeDeps, type EpisodeEnv, type EpisodeSettings, runEpisode } from './agent-loop.ts'
import type { AgentEpisodeRunner, AgentTaskSpec, McpTaskSpec } from './agent-task.ts'
import { EpisodeError, RolloutSettingsError } from './errors.ts'
import type { Uniform } from './policy-router.ts'

/** One task of the mix. */
export interface TaskMixEntry {
  name: string
  /** Relative sampling weight (> 0). */
  weight: number
  /** Difficulty level; the env adapter may change it while the run goes. */
  difficulty?: number
  /** Most assistant turns of this task's episodes (the episode settings' `maxTurns` when absent). */
  maxTurns?: number
  /** Most tokens per turn for this task (the episode settings' `maxNewTokens` when absent). */
  maxNewTokens?: number
  /** Set for a task played by an agent program through the gateway (`RolloutDeps.agents`). */
  agent?: AgentTaskSpec
  /** Set for a task whose environment is MCP servers (`RolloutDeps.mcp` plays it). */
  mcp?: McpTaskSpec
}

/** Settings of the rollout side. */
export interface RolloutSettings {
  tasks: readonly TaskMixEntry[]
  /** Samples per task instance (G of GRPO). */
  groupSize: number
  /** Most episodes in flight at once (agent loops). Groups in flight = ceil(concurrency / groupSize). */
  concurrency: number
  /** Attempts of a failed episode before it is counted failed (1 = no retry). */
  attempts: number
  /** Seed of task choice, instance seeds and sampling. */
  seed: number
  episode: EpisodeSettings
  /** The data split episodes come from. */
  split?: 'train' | 'eval'
  /**
   * Share of groups whose episodes go through `annotate` (step judging), in [0, 1]: each group is
   * drawn once (seeded, its own random stream, so the task sequence does not change); the episodes
   * of the others carry no annotation. Default 1 (every group).
   */
  annotateShare?: number
}

/**
 * Extra fields for a finished episode's trajectory from its chat messages (the reward model's
 * step judgements); the token bookkeeping is never touched. A failure leaves the trajectory as it is.
 * @param seed the episode's sampling seed (a retried judgement judges the same).
 * @param signal aborted when the driver stops: the annotator gives its requests up.
 */
export type EpisodeAnnotator = (
  task: string,
  messages: readonly ChatMessage[],
  seed: number,
  signal?: AbortSignal,
) => Promise<Partial<Trajectory> | undefined>

/** What the rollout driver runs episodes with. */
export interface RolloutDeps extends EpisodeDeps {
  /** Called after each finished episode (step judging); none by default. */
  annotate?: EpisodeAnnotator
  /** Plays the episodes of agent tasks (`TaskMixEntry.agent`); needed when the mix has one. */
  agents?: AgentEpisodeRunner
  /** The environment of an MCP task (`TaskMixEntry.mcp`), by task; needed when the mix has one. */
  mcp?: (task: string, spec: McpTaskSpec) => EpisodeEnv
}

/** Where finished groups go (the JetStream publisher, or a collector in sync mode). */
export type GroupSink = (group: TrajectoryGroupPayload) => Promise<void>

/** Counters of the rollout side since start. */
export interface RolloutStats {
  episodes: number
  groups: number
  /** Episodes that failed after their retries, by cause. */
  failed: Record<string, number>
  /** Episode attempts that were retried. */
  retried: number
  generatedTokens: number
  /** Per task: finished episodes, successes, summed outcome reward. */
  perTask: Record<string, { episodes: number; successes: number; reward: number; tokens: number }>
  /** Turns made by stale engines / all turns. */
  staleTurns: number
  turns: number
  /** Episodes whose annotation (step judging) failed; they went on without it. */
  annotateFailed: number
  /** Groups drawn for annotation (`annotateShare`), when there is an annotator. */
  annotatedGroups: number
}

/**
 * The rollout actor's engine: keeps `concurrency` agent loops busy, one coroutine per
 * trajectory, grouped G per task instance; each finished group goes to the sink.
 * @throws RolloutSettingsError (constructor) for settings that cannot work (an empty task mix, a
 *   weight not > 0, an MCP or agent task without its dependency, groupSize < 1, annotateShare
 *   outside [0, 1]).
 */
export class RolloutDriver {
  readonly stats: RolloutStats = {
    episodes: 0,
    groups: 0,
    failed: {},
    retried: 0,
    generatedTokens: 0,
    perTask: {},
    staleTurns: 0,
    turns: 0,
    annotateFailed: 0,
    annotatedGroups: 0,
  }
  private readonly rng: Uniform
  /** Draws which groups are annotated (`annotateShare`). */
  private readonly annotateRng: Uniform
  private counter = 0
  /** Aborted by `stop`: every request of the episodes in flight is given up. */
  private readonly halt = new AbortController()
  private readonly difficulty = new Map<string, number>()

  constructor(
    private readonly id: string,
    private readonly deps: RolloutDeps,
    private readonly settings: RolloutSettings,
    private readonly sink: GroupSink,
    /** The learner version now (recorded as the group's `started_version`). */
    private readonly version: () => number,
  ) {
    if (settings.tasks.length === 0) throw new RolloutSettingsError('the task mix is empty')
    for (const t of settings.tasks) {
      if (!(t.weight > 0)) throw new RolloutSettingsError(`task ${t.name}: weight must be > 0`)
      if (t.difficulty !== undefined) this.difficulty.set(t.name, t.difficulty)
      if (t.mcp && !deps.mcp)
        throw new RolloutSettingsError(
          `task ${t.name} has MCP servers, but the rollout has no MCP environment`,
        )
      if (t.agent && !deps.agents)
        throw new RolloutSettingsError(
          `task ${t.name} is played by an agent program, but the rollout has no agent gateway`,
        )
    }
    if (settings.groupSize < 1) throw new RolloutSettingsError('groupSize must be >= 1')
    const share = settings.annotateShare ?? 1
    if (!(share >= 0 && share <= 1))
      throw new RolloutSettingsError(`annotateShare must be in [0, 1], got ${share}`)
    // Every request in flight listens on the stop signal: `concurrency` loops and more.
    setMaxListeners(0, this.halt.signal)
    this.rng = createRng(settings.seed)
    this.annotateRng = createRng(annotateSeedOf(settings.seed))
  }

  /** Sets a task's difficulty for the groups started from now on (the env adapter calls this). */
  setDifficulty(task: string, level: number): void {
    this.difficulty.set(task, level)
  }

  private pickTask(): TaskMixEntry {
    const total = this.settings.tasks.reduce((s, t) => s + t.weight, 0)
    let u = this.rng.next() * total
    for (const t of this.settings.tasks) {
      u -= t.weight
      if (u < 0) return t
    }
    return this.settings.tasks[this.settings.tasks.length - 1]!
  }

  /** Runs one group of G episodes of one task instance and hands it to the sink. */
  async runGroup(): Promise<TrajectoryGroupPayload | undefined> {
    const task = this.pickTask()
    const n = this.counter++
    const seed = episodeSeeds.group(this.settings.seed, n)
    const difficulty = this.difficulty.get(task.name)
    const startedVersion = this.version()
    const share = this.settings.annotateShare ?? 1
    const annotate = share >= 1 || this.annotateRng.next() < share
    if (annotate && this.deps.annotate) this.stats.annotatedGroups++
    const results = await Promise.all(
      Array.from({ length: this.settings.groupSize }, (_, i) =>
        this.episodeWithRetry(task, seed, difficulty, n * 64 + i, annotate),
      ),
    )
    // A group cut short by `stop` is not handed on (its episodes were given up, not finished).
    if (this.halt.signal.aborted) return undefined
    // An agent episode whose history was not append-only gives one trajectory per trained segment.
    const samples = results.flatMap((r) => r ?? [])
    if (samples.length === 0) return undefined
    const group: TrajectoryGroupPayload = {
      group_id: `${this.id}-${n}`,
      task: task.name,
      index: Math.abs(seed) % 1_000_000,
      seed,
      difficulty: difficulty ?? 0,
      started_version: startedVersion,
      samples,
    }
    await this.sink(group)
    this.stats.groups++
    return group
  }

  private async episodeWithRetry(
    entry: TaskMixEntry,
    seed: number,
    difficulty: number | undefined,
    samplingSeed: number,
    annotate: boolean,
  ): Promise<Trajectory[] | undefined> {
    const task = entry.name
    const episode = {
      ...this.settings.episode,
      ...(entry.maxTurns ? { maxTurns: entry.maxTurns } : {}),
      ...(entry.maxNewTokens ? { maxNewTokens: entry.maxNewTokens } : {}),
    }
    const { signal } = this.halt
    let lastError: unknown
    for (let attempt = 0; attempt < Math.max(1, this.settings.attempts); attempt++) {
      if (signal.aborted) return undefined
      if (attempt > 0) this.stats.retried++
      try {
        const seedOfAttempt = episodeSeeds.attempt(samplingSeed, attempt)
        const ep = entry.agent
          ? await this.deps.agents!.run(
              task,
              entry.agent,
              { seed, split: this.settings.split ?? 'train' },
              episode,
              seedOfAttempt,
              signal,
            )
          : await runEpisode(
              entry.mcp ? { ...this.deps, env: this.deps.mcp!(task, entry.mcp) } : this.deps,
              { task, seed, difficulty, split: this.settings.split ?? 'train' },
              episode,
              seedOfAttempt,
              signal,
            ).then((e) => ({ ...e, trajectories: [{ ...e.trajectory, messages: e.messages }] }))
        for (const t of ep.trajectories)
          if (annotate && this.deps.annotate) {
            try {
              Object.assign(t, await this.deps.annotate(task, t.messages ?? [], seedOfAttempt, signal))
            } catch {
              if (signal.aborted) return undefined
              this.stats.annotateFailed++
            }
          }
        this.stats.episodes++
        this.stats.generatedTokens += ep.generatedTokens
        this.stats.perTask[task] ??= { episodes: 0, successes: 0, reward: 0, tokens: 0 }
        const pt = this.stats.perTask[task]
        pt.episodes++
        pt.tokens += ep.generatedTokens
        pt.successes += ep.trajectories[0]?.metrics.success ?? 0
        pt.reward += ep.trajectories[0]?.reward ?? 0
        for (const t of ep.trajectories) {
          this.stats.turns += t.turns
          this.stats.staleTurns += t.stale_turns
        }
        return ep.trajectories
      } catch (err) {
        // Given up by `stop`: not a failure of the episode.
        if (signal.aborted) return undefined
        lastError = err
      }
    }
    // Agent episodes' errors carry their own cause (`agent_crashed`, `agent_timeout`, ...).
    // (an MCP server's failure inside an episode error is counted as itself, `mcp_failed`).
    const failureOf = (e: unknown) => {
      const f = (e as { failure?: unknown } | undefined)?.failure
      return typeof f === 'string' ? f : undefined
    }
    const cause =
      (lastError instanceof EpisodeError ? failureOf(lastError.cause) : undefined) ??
      failureOf(lastError) ??
      'error'
    this.stats.failed[cause] = (this.stats.failed[cause] ?? 0) + 1
    return undefined
  }

  /**
   * Keeps ceil(concurrency / groupSize) groups in flight until `stop()` (asynchronous mode).
   * Resolves when stopped and every group in flight has ended: given up, or handed to the sink.
   */
  async runForever(onError: (err: unknown) => void = () => {}): Promise<void> {
    const lanes = Math.max(1, Math.ceil(this.settings.concurrency / this.settings.groupSize))
    const lane = async () => {
      // A group whose every episode failed (no environment worker, a task that cannot start) is
      // not retried at once: the lane backs off, doubling up to 5 s, so a broken environment
      // does not turn into a busy loop; the failures are counted by cause in the metrics.
      let pause = 0
      while (!this.halt.signal.aborted) {
        let produced = false
        try {
          produced = (await this.runGroup()) !== undefined
        } catch (err) {
          onError(err)
        }
        pause = produced ? 0 : Math.min(5_000, pause ? pause * 2 : 100)
        if (pause) await sleep(systemClock, pause, this.halt.signal)
      }
    }
    await Promise.all(Array.from({ length: lanes }, lane))
  }

  /** Runs exactly `groups` groups with the same concurrency bound (synchronous mode's batch). */
  async runBatch(groups: number): Promise<TrajectoryGroupPayload[]> {
    const lanes = Math.max(1, Math.ceil(this.settings.concurrency / this.settings.groupSize))
    const out: TrajectoryGroupPayload[] = []
    let left = groups
    const lane = async () => {
      while (left > 0 && !this.halt.signal.aborted) {
        left--
        const g = await this.runGroup()
        if (g) out.push(g)
      }
    }
    await Promise.all(Array.from({ length: Math.min(lanes, groups) }, lane))
    return out
  }

  /**
   * Stops the loops: no new group starts, and the episodes in flight give up their requests at once
   * (generate, env, judge: each fails with RequestAbortedError), so the loops end within moments
   * instead of waiting for deadlines of up to two minutes on servers that are stopping too. Their
   * groups are dropped; a group already in the sink (a publish in flight) finishes there.
   */
  stop(): void {
    this.halt.abort(new Error(`rollout ${this.id} stopped`))
  }

  /**
   * Metric values of the rollout side (namespaced `rollout/...`). Counters are totals since
   * start; per-task success and reward are over the episodes since the previous call.
   */
  metrics(): MetricValues {
    const s = this.stats
    const out: MetricValues = {
      'rollout/episodes': s.episodes,
      'rollout/groups': s.groups,
      'rollout/retried': s.retried,
      'rollout/generated_tokens': s.generatedTokens,
      'rollout/stale_turn_frac': s.turns ? s.staleTurns / s.turns : 0,
    }
    if (this.deps.annotate) {
      out['rollout/annotate_failed'] = s.annotateFailed
      out['rollout/annotated_groups'] = s.annotatedGroups
    }
    for (const [cause, n] of Object.entries(s.failed)) out[`rollout/failed/${cause}`] = n
    for (const [task, t] of Object.entries(s.perTask)) {
      out[`rollout/success/${task}`] = t.episodes ? t.successes / t.episodes : 0
      out[`rollout/reward/${task}`] = t.episodes ? t.reward / t.episodes : 0
      out[`rollout/episodes/${task}`] = t.episodes
      out[`rollout/generated_tokens_mean/${task}`] = t.episodes ? t.tokens / t.episodes : 0
    }
    s.perTask = {}
    return out
  }
}
