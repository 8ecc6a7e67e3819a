import cliProgress from 'cli-progress'
import Table from 'cli-table3'
import { type MetricsLine, onLearnerAxis, RUN_MAX_STEPS } from '../../actors/index.ts'

/** One report of the cold-start SFT: its step and the report's time, ms since the epoch. */
export interface SftMark {
  step: number
  time: number
}

/** One value of a metric key from one actor and the time of its report, ms since the epoch. */
interface Sample {
  value: number
  time: number
}

/** Episodes per task the live view's success and reward are taken over (the newest ones). */
export const SUCCESS_WINDOW_EPISODES = 256

/** One report's episodes of one task: how many, and their summed success and reward. */
interface EpisodeChunk {
  episodes: number
  successes: number
  /** Summed reward; undefined when the report gave no reward for the task. */
  reward?: number
}

/** Success and reward of a task over its newest episodes (`MetricsState.episodeWindow`). */
export interface EpisodeWindow {
  /** Episodes the means are over: the newest reports' whole counts, at least the window once reached. */
  episodes: number
  /** Mean success over those episodes, in [0, 1]. */
  success: number
  /** Mean outcome reward over those of the episodes whose reports gave one; undefined when none did. */
  reward?: number
}

/**
 * The newest value of each metric key, per reporting actor (`role:id`), and the one before it (the
 * rate of a counter, `rate`); and per task, the success and reward over its newest
 * `SUCCESS_WINDOW_EPISODES` episodes (`episodeWindow`), from the rollout's per-report counts.
 */
export class MetricsState {
  private readonly latest = new Map<string, Map<string, Sample>>()
  private readonly previous = new Map<string, Map<string, Sample>>()
  private readonly windows = new Map<string, EpisodeChunk[]>()
  /** Time of the newest report counted into the windows, per actor: a report seen again counts once. */
  private readonly windowTime = new Map<string, number>()

  /**
   * @param windowEpisodes episodes per task of the success window (default `SUCCESS_WINDOW_EPISODES`).
   */
  constructor(readonly windowEpisodes: number = SUCCESS_WINDOW_EPISODES) {}
  /** Highest learner step seen. */
  step = 0
  /** Reports received. */
  reports = 0
  /** Wall-clock time of the first and the newest report, ms since the epoch. */
  firstTime?: number
  lastTime?: number
  /**
   * The cold-start SFT's first and newest reports (`sft/step` and the report's time, ms): the
   * time per SFT step, hence its ETA, is measured between them.
   */
  sft?: { first: SftMark; last: SftMark }

  add(line: MetricsLine): void {
    this.reports++
    if (onLearnerAxis(line)) this.step = Math.max(this.step, line.step)
    this.firstTime = Math.min(this.firstTime ?? line.time, line.time)
    this.lastTime = Math.max(this.lastTime ?? line.time, line.time)
    const sftStep = line.values[MonitorKeys.sft.step]
    if (sftStep !== undefined && Number.isFinite(sftStep)) {
      const mark = { step: sftStep, time: line.time }
      if (!this.sft) this.sft = { first: mark, last: mark }
      else {
        if (sftStep < this.sft.first.step) this.sft.first = mark
        if (sftStep >= this.sft.last.step) this.sft.last = mark
      }
    }
    const who = `${line.role}:${line.id}`
    this.addEpisodes(who, line)
    for (const [key, value] of Object.entries(line.values)) {
      if (!Number.isFinite(value)) continue
      const byActor = this.latest.get(key) ?? new Map<string, Sample>()
      this.latest.set(key, byActor)
      const before = byActor.get(who)
      // Reports can arrive out of order: an older one changes nothing.
      if (before && line.time < before.time) continue
      if (before && line.time > before.time) {
        const previous = this.previous.get(key) ?? new Map<string, Sample>()
        this.previous.set(key, previous)
        previous.set(who, before)
      }
      byActor.set(who, { value, time: line.time })
    }
  }

  /**
   * Adds one report's episodes to the per-task windows: the rollout reports per task the episodes
   * since its previous report (`rollout/episodes/<task>`) and their mean success and reward
   * (`rollout/success/<task>`, `rollout/reward/<task>`). A report not newer than the actor's last
   * counted one (a repeat, or one out of order) adds nothing.
   */
  private addEpisodes(who: string, line: MetricsLine): void {
    const prefix = `${MonitorKeys.episodes}/`
    const keys = Object.keys(line.values).filter(
      (k) => k.startsWith(prefix) && !k.slice(prefix.length).includes('/'),
    )
    if (keys.length === 0) return
    const last = this.windowTime.get(who)
    if (last !== undefined && line.time <= last) return
    this.windowTime.set(who, line.time)
    for (const key of keys) {
      const task = key.slice(prefix.length)
      const n = line.values[key]!
      const success = line.values[`${MonitorKeys.success}/${task}`]
      if (!(n > 0) || !Number.isFinite(n) || success === undefined || !Number.isFinite(success)) continue
      const reward = line.values[`${MonitorKeys.reward}/${task}`]
      const chunks = this.windows.get(task) ?? []
      this.windows.set(task, chunks)
      chunks.push({
        episodes: n,
        successes: success * n,
        ...(reward !== undefined && Number.isFinite(reward) ? { reward: reward * n } : {}),
      })
      // Keep the newest reports that hold the window: drop the oldest while the rest still do.
      let total = chunks.reduce((a, c) => a + c.episodes, 0)
      while (chunks.length > 1 && total - chunks[0]!.episodes >= this.windowEpisodes)
        total -= chunks.shift()!.episodes
    }
  }

  /**
   * Success and reward of `task` over its newest episodes: the fewest newest reports holding
   * `windowEpisodes` episodes (all of them before that many arrived); undefined when no report
   * carried an episode count for it.
   */
  episodeWindow(task: string): EpisodeWindow | undefined {
    const chunks = this.windows.get(task)
    if (!chunks?.length) return undefined
    const episodes = chunks.reduce((a, c) => a + c.episodes, 0)
    const rewarded = chunks.filter((c) => c.reward !== undefined)
    const rewardEpisodes = rewarded.reduce((a, c) => a + c.episodes, 0)
    return {
      episodes,
      success: chunks.reduce((a, c) => a + c.successes, 0) / episodes,
      ...(rewardEpisodes ? { reward: rewarded.reduce((a, c) => a + c.reward!, 0) / rewardEpisodes } : {}),
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
    const sum = [...byActor.values()].reduce((a, b) => a + b.value, 0)
    return combine === 'sum' ? sum : sum / byActor.size
  }

  /**
   * The rate of the counter `key`, per second, summed over actors: for each actor, the change
   * between its two newest reports of it over the time between them. An actor with one report, or
   * whose counter went down (its process restarted), is left out; undefined when none is left.
   */
  rate(key: string): number | undefined {
    const latest = this.latest.get(key)
    const previous = this.previous.get(key)
    if (!latest || !previous) return undefined
    let sum: number | undefined
    for (const [who, now] of latest) {
      const before = previous.get(who)
      if (!before || now.time <= before.time || now.value < before.value) continue
      sum = (sum ?? 0) + ((now.value - before.value) * 1000) / (now.time - before.time)
    }
    return sum
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
 * end when `--max-steps` is not given; every key ending in `/restarts` counts restarts: those of
 * processes (`process/<name>/restarts`) and those of actors (the rest).
 */
export const MonitorKeys = {
  success: 'rollout/success',
  reward: 'rollout/reward',
  /** Episodes per task since the rollout's previous report: the weights of the success window. */
  episodes: 'rollout/episodes',
  difficulty: 'env/difficulty',
  /**
   * Generation throughput: the engines' `engine/tokens_per_s` (summed), reported every 5 s by each
   * engine; until the first of those arrives (an RL phase of a few seconds, as in recipes/tiny.ts,
   * ends before it), the rate of the rollout's counter `generatedTokens` between its reports.
   */
  tokensPerS: 'engine/tokens_per_s',
  /** Tokens the policy generated for the rollout's episodes, a counter since the rollout started. */
  generatedTokens: 'rollout/generated_tokens',
  stalenessMean: 'pipeline/staleness_mean',
  stalenessMax: 'pipeline/staleness_max',
  /**
   * The first of these present is the loss column: the learner node's minimised RL loss
   * (`loss/total`, policy loss plus the KL and entropy terms; see `RlStepMetrics`), else its policy
   * loss.
   */
  loss: ['loss/total', 'policy/loss'],
  maxSteps: RUN_MAX_STEPS,
  /** Restarts of a run's processes by the process supervisor (`process/<name>/restarts`). */
  processRestarts: /^process\/[^/]+\/restarts$/,
  /** The learner's cold-start SFT reports (one per SFT step, at learner step 0). */
  sft: {
    step: 'sft/step',
    stepsTotal: 'sft/steps_total',
    loss: 'sft/loss',
    tokensPerS: 'sft/tokens_per_s',
    gradNorm: 'sft/grad_norm',
  },
} as const

/**
 * True while the cold-start SFT runs: an SFT step was reported, no learner step yet, and the
 * newest SFT step is below `sft/steps_total` (when known).
 */
export function sftRunning(state: MetricsState): boolean {
  if (!state.sft || state.step > 0) return false
  const total = state.value(MonitorKeys.sft.stepsTotal)
  return total === undefined || state.sft.last.step < total
}

/** `42s`, `3m 12s`, `1h 05m`: a duration for the live view. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/**
 * Estimated time left of the SFT, ms: the mean time per step between its first and newest reports
 * times the steps left; undefined before two steps were reported or without a total.
 */
export function sftEtaMs(state: MetricsState): number | undefined {
  const total = state.value(MonitorKeys.sft.stepsTotal)
  if (!state.sft || total === undefined) return undefined
  const { first, last } = state.sft
  if (last.step <= first.step) return undefined
  return ((last.time - first.time) / (last.step - first.step)) * Math.max(0, total - last.step)
}

const fmt = (v: number | undefined, digits = 3) =>
  v === undefined ? '-' : Math.abs(v) >= 1000 ? v.toFixed(0) : v.toFixed(digits)

/** Options of `renderSnapshot`. */
export interface SnapshotOptions {
  run: string
  /** End of the progress bar, learner steps (default: the `run/max_steps` metric, else `budgetMaxSteps`). */
  maxSteps?: number
  /**
   * End of the progress bar when neither `maxSteps` nor the `run/max_steps` metric gives one: the
   * step budget of the run directory's `recipe.json`, when the monitor runs where it is.
   */
  budgetMaxSteps?: number
  /** Characters of the bar (default 30). */
  barSize?: number
  /**
   * The run's time budget (`budget.maxMinutes`) as ms, and the time since the run started, ms. The
   * run stops at whichever budget ends first, so the bar shows the larger of the step and time
   * fractions, and the header shows both.
   */
  time?: { elapsedMs: number; limitMs: number }
  /**
   * Actor restarts of the run's services (`$SRV.STATS` data `restarts`, summed), when known;
   * otherwise the actor metrics ending in `/restarts` are summed. The process restarts
   * (`process/<name>/restarts`) are added either way (`totalRestarts`).
   */
  serviceRestarts?: number
}

/**
 * Restarts of a run: actor restarts (`serviceRestarts` when known, else the metrics ending in
 * `/restarts`) plus the process supervisor's restarts of its processes (`process/<name>/restarts`,
 * reported by `triad run`); undefined when neither is known.
 */
export function totalRestarts(state: MetricsState, serviceRestarts?: number): number | undefined {
  const sum = (keys: string[]) =>
    keys.length ? keys.reduce((n, k) => n + (state.value(k, 'sum') ?? 0), 0) : undefined
  const keys = state.keys().filter((k) => k.endsWith('/restarts'))
  const processes = sum(keys.filter((k) => MonitorKeys.processRestarts.test(k)))
  const actors = serviceRestarts ?? sum(keys.filter((k) => !MonitorKeys.processRestarts.test(k)))
  if (processes === undefined && actors === undefined) return undefined
  return (processes ?? 0) + (actors ?? 0)
}

/** A progress bar of `barsize` characters, `progress` in [0, 1]. */
function bar(progress: number, barsize: number): string {
  return cliProgress.Format.BarFormat(progress, {
    barsize,
    barCompleteString: '\u2588'.repeat(barsize),
    barIncompleteString: '\u2591'.repeat(barsize),
    barGlue: '',
  } as never)
}

/** ` time 1m 05s/15m 00s`, the time budget part of a header (empty without a time budget). */
function timePart(options: SnapshotOptions): string {
  const t = options.time
  return t ? `  time ${formatDuration(Math.min(t.elapsedMs, t.limitMs))}/${formatDuration(t.limitMs)}` : ''
}

/** The fraction of the time budget used, in [0, 1]; undefined without a time budget. */
function timeFraction(options: SnapshotOptions): number | undefined {
  const t = options.time
  return t && t.limitMs > 0 ? Math.min(1, Math.max(0, t.elapsedMs / t.limitMs)) : undefined
}

/**
 * The view while the cold-start SFT runs: a bar of SFT steps (`step k/N`), then the newest loss,
 * tokens/s, gradient norm and the ETA.
 */
function renderSft(state: MetricsState, options: SnapshotOptions): string {
  const k = state.sft?.last.step ?? 0
  const total = state.value(MonitorKeys.sft.stepsTotal)
  const lines: string[] = []
  if (total && total > 0) {
    const progress = Math.min(1, k / total)
    lines.push(
      `run ${options.run}  cold-start SFT  ${bar(progress, options.barSize ?? 30)} ${Math.round(progress * 100)}%  step ${k}/${total}${timePart(options)}`,
    )
  } else lines.push(`run ${options.run}  cold-start SFT  step ${k}${timePart(options)}`)
  const eta = sftEtaMs(state)
  const stats = new Table({
    head: ['loss', 'tokens/s', 'grad norm', 'ETA'],
    style: { head: [], border: [], compact: true },
  })
  stats.push([
    fmt(state.value(MonitorKeys.sft.loss), 4),
    fmt(state.value(MonitorKeys.sft.tokensPerS), 1),
    fmt(state.value(MonitorKeys.sft.gradNorm), 3),
    eta === undefined ? '-' : formatDuration(eta),
  ])
  lines.push(stats.toString())
  return `${lines.join('\n')}\n`
}

/**
 * Renders one terminal snapshot. While the cold-start SFT runs (`sftRunning`): a progress bar of
 * SFT steps with loss, tokens/s, gradient norm and ETA. Afterwards: a progress bar of the run's
 * budget, learner steps or time, whichever is further along (under it one line on the finished
 * SFT, when it was seen), a table of success, reward and difficulty per task (success and reward
 * over the task's newest `windowEpisodes` episodes, whose count the `episodes` column shows; a
 * task whose reports carry no episode count shows its newest report and `-`), and a line of
 * tokens/s (summed over engines, see `MonitorKeys.tokensPerS`), staleness, loss and restarts. With
 * a time budget (`time`) both headers show the time used of it. Plain text without colours.
 */
export function renderSnapshot(state: MetricsState, options: SnapshotOptions): string {
  if (sftRunning(state)) return renderSft(state, options)
  const maxSteps = options.maxSteps ?? state.value(MonitorKeys.maxSteps, 'mean') ?? options.budgetMaxSteps
  const barsize = options.barSize ?? 30
  const lines: string[] = []
  // The run ends at whichever budget runs out first: the bar follows the one further along.
  const stepFraction = maxSteps && maxSteps > 0 ? Math.min(1, state.step / maxSteps) : undefined
  const timeFrac = timeFraction(options)
  const steps = stepFraction === undefined ? `step ${state.step}` : `step ${state.step}/${maxSteps}`
  if (stepFraction !== undefined || timeFrac !== undefined) {
    const progress = Math.max(stepFraction ?? 0, timeFrac ?? 0)
    lines.push(
      `run ${options.run}  ${bar(progress, barsize)} ${Math.round(progress * 100)}%  ${steps}${timePart(options)}`,
    )
  } else lines.push(`run ${options.run}  ${steps}`)
  if (state.sft) {
    const total = state.value(MonitorKeys.sft.stepsTotal)
    lines.push(
      `cold-start SFT done: ${state.sft.last.step}${total === undefined ? '' : `/${total}`} steps, final loss ${fmt(state.value(MonitorKeys.sft.loss), 4)}`,
    )
  }

  const tasks = state.tasks([MonitorKeys.success, MonitorKeys.reward, MonitorKeys.difficulty])
  const table = new Table({
    head: ['task', 'success', 'reward', 'difficulty', 'episodes'],
    style: { head: [], border: [], compact: true },
    colAligns: ['left', 'right', 'right', 'right', 'right'],
  })
  for (const t of tasks) {
    // Over the task's newest episodes when the rollout counts them, else its newest report.
    const w = state.episodeWindow(t)
    table.push([
      t,
      fmt(w ? w.success : state.value(`${MonitorKeys.success}/${t}`)),
      fmt(w?.reward ?? state.value(`${MonitorKeys.reward}/${t}`)),
      fmt(state.value(`${MonitorKeys.difficulty}/${t}`), 0),
      w ? String(w.episodes) : '-',
    ])
  }
  if (tasks.length) lines.push(table.toString())
  else lines.push('(no per-task metrics yet)')

  const restarts = totalRestarts(state, options.serviceRestarts)
  const lossKey = MonitorKeys.loss.find((k) => state.value(k) !== undefined)
  const stats = new Table({
    head: ['tokens/s', 'staleness mean', 'staleness max', 'loss', 'restarts', 'reports'],
    style: { head: [], border: [], compact: true },
  })
  stats.push([
    fmt(state.value(MonitorKeys.tokensPerS, 'sum') ?? state.rate(MonitorKeys.generatedTokens), 1),
    fmt(state.value(MonitorKeys.stalenessMean), 2),
    fmt(state.value(MonitorKeys.stalenessMax), 0),
    fmt(lossKey ? state.value(lossKey) : undefined, 4),
    restarts === undefined ? '-' : String(restarts),
    String(state.reports),
  ])
  lines.push(stats.toString())
  return `${lines.join('\n')}\n`
}
