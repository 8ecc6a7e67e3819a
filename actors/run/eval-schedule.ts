import { existsSync, type FSWatcher, mkdirSync, watch } from 'node:fs'
import { join } from 'node:path'
import { type PipelineCheckpoint, readLatestCheckpoint } from '../pipeline/index.ts'
import { type Clock, systemClock } from '../runtime/index.ts'

/**
 * Why a due step of the periodic evaluation stays unevaluated:
 * - `superseded`: a newer multiple of `every` came before its turn (only the newest waits);
 * - `pruned`: its checkpoint (`step-<n>/`) was gone before it was seen;
 * - `stopped`: the run ended before its turn (the end of a run waits only for the one in flight).
 */
export type EvalSkipReason = 'superseded' | 'pruned' | 'stopped'

/** A due step that the schedule did not evaluate, and why. */
export interface SkippedEvaluation {
  /** Learner step of the checkpoint. */
  version: number
  reason: EvalSkipReason
  /** The checkpoint it would have evaluated (its pinned copy when it had one). */
  checkpoint: PipelineCheckpoint
}

/** Options of `EvalSchedule`. */
export interface EvalScheduleOptions {
  /** The run's `checkpoints/` (its `latest.json` is watched). */
  checkpointsDir: string
  /** Learner steps between evaluations, > 0. */
  every: number
  /** Checkpoints of this version or later are left to the end-of-run evaluation (the step budget). */
  until?: number
  /**
   * Checkpoints to evaluate first, whatever `every` and `until` say: the evaluations a stopped run
   * left unfinished, in step order. The first starts in the constructor; of the rest only the
   * last waits (the others are skipped as `superseded`, like any checkpoint that falls behind).
   */
  pending?: readonly PipelineCheckpoint[]
  /**
   * Evaluates one checkpoint; resolves when it is done. `signal` aborts when the schedule stops
   * without waiting (the run was interrupted).
   */
  evaluate: (checkpoint: PipelineCheckpoint, signal: AbortSignal) => Promise<void>
  /**
   * Keeps the checkpoint of a due step for its evaluation, called as soon as the step is seen
   * (while another evaluation may still run): for example copies it where pruning cannot reach it,
   * returning the checkpoint to evaluate. Absent: the checkpoint is evaluated where it is.
   * @throws when it cannot: `onError` is told and the step stays unevaluated.
   */
  pin?: (checkpoint: PipelineCheckpoint) => PipelineCheckpoint
  /**
   * Releases what `pin` kept for a waiting checkpoint that will not be evaluated (`superseded`,
   * or `stopped` by a stop with `wait`). A stop without `wait` keeps it, for a resume.
   */
  unpin?: (checkpoint: PipelineCheckpoint) => void
  /** Called when an evaluation failed or its checkpoint could not be pinned (the schedule goes on). */
  onError?: (err: unknown, checkpoint: PipelineCheckpoint) => void
  /** Called for each due step that stays unevaluated, in the order they are dropped. */
  onSkip?: (skipped: SkippedEvaluation) => void
  clock?: Clock
  /** How often `latest.json` is read besides the file-system events, ms (default 1,000). */
  pollMs?: number
}

/** The smallest multiple of `every` above `version`. */
export const nextEvaluationStep = (version: number, every: number) =>
  (Math.floor(version / every) + 1) * every

/**
 * The periodic evaluation of a run: evaluates checkpoints at multiples of `every` that the learner
 * reaches below `until` (the first is the multiple after the version the run starts from; the
 * learner checkpoints at each of them), one evaluation at a time. It watches `latest.json`
 * (file-system events, and a poll every `pollMs`), so the learner never waits for it.
 *
 * It never falls behind by more than one checkpoint: at most one evaluation runs and at most one
 * waits. A multiple reached while an evaluation runs waits, its checkpoint kept by `pin` at once
 * (pruning would delete it before its turn); a newer multiple replaces it (the older is skipped as
 * `superseded` and `unpin`ned), so the one evaluated next is always the newest. Of several
 * multiples that `latest.json` went past between two looks, only the newest is taken (from
 * `checkpoints/step-<n>/`; `pruned` when that is gone), the others are `superseded`. Every skip
 * goes to `onSkip` and `skipped`. The `pending` checkpoints (a resumed run's interrupted
 * evaluations) go first, the first one at once. A stop with `wait` waits only for the evaluation in
 * flight (the waiting one is skipped as `stopped`), so the end of a run waits for at most that one
 * and its own final evaluation.
 */
export class EvalSchedule {
  private next: number
  private running: Promise<void> | undefined
  /** The one checkpoint waiting for its turn. */
  private waiting: PipelineCheckpoint | undefined
  private stopped = false
  private timer: unknown
  private watcher: FSWatcher | undefined
  private readonly abort = new AbortController()
  private readonly clock: Clock
  /** Versions whose evaluation was started, in order. */
  readonly started: number[] = []
  /** The due steps left unevaluated, in the order they were dropped. */
  readonly skipped: { version: number; reason: EvalSkipReason }[] = []

  /** @throws RangeError when `every` is not a positive integer. */
  constructor(private readonly options: EvalScheduleOptions) {
    if (!(Number.isInteger(options.every) && options.every > 0))
      throw new RangeError(
        `evaluation every must be a positive integer of learner steps, got ${options.every}`,
      )
    this.clock = options.clock ?? systemClock
    this.next = nextEvaluationStep(readLatestCheckpoint(options.checkpointsDir)?.version ?? 0, options.every)
    mkdirSync(options.checkpointsDir, { recursive: true })
    const [first, ...rest] = options.pending ?? []
    if (first) this.start(first)
    for (const checkpoint of rest) this.wait(checkpoint)
    try {
      this.watcher = watch(options.checkpointsDir, (_event, file) => {
        if (file === 'latest.json') this.check()
      })
      this.watcher.on('error', () => {})
    } catch {
      // No file-system events here: the poll alone finds new checkpoints.
    }
    this.poll()
    this.check()
  }

  /** The next version that triggers an evaluation. */
  get nextStep(): number {
    return this.next
  }

  /** The version of the checkpoint waiting for its turn (undefined when none waits). */
  get waitingStep(): number | undefined {
    return this.waiting?.version
  }

  private poll(): void {
    this.timer = this.clock.setTimeout(() => {
      if (this.stopped) return
      this.check()
      this.poll()
    }, this.options.pollMs ?? 1_000)
    ;(this.timer as { unref?: () => void })?.unref?.()
  }

  /**
   * Reads `latest.json`, takes the newest multiple of `every` reached since the last look (the
   * others are skipped), and starts the waiting evaluation when none runs.
   */
  check(): void {
    if (this.stopped) return
    this.collect()
    if (this.running || !this.waiting) return
    const checkpoint = this.waiting
    this.waiting = undefined
    this.start(checkpoint)
  }

  private skip(checkpoint: PipelineCheckpoint, reason: EvalSkipReason): void {
    this.skipped.push({ version: checkpoint.version, reason })
    this.options.onSkip?.({ version: checkpoint.version, reason, checkpoint })
  }

  /** Makes `checkpoint` the one waiting; the one it replaces is skipped and released. */
  private wait(checkpoint: PipelineCheckpoint): void {
    const older = this.waiting
    this.waiting = checkpoint
    if (older) this.drop(older, 'superseded')
  }

  private drop(checkpoint: PipelineCheckpoint, reason: EvalSkipReason): void {
    try {
      this.options.unpin?.(checkpoint)
    } catch (err) {
      this.options.onError?.(err, checkpoint)
    }
    this.skip(checkpoint, reason)
  }

  /** Takes the newest due multiple up to the latest checkpoint's version; skips those before it. */
  private collect(): void {
    let latest: PipelineCheckpoint | undefined
    try {
      latest = readLatestCheckpoint(this.options.checkpointsDir)
    } catch {
      return // being replaced; the next event or poll reads it again
    }
    if (!latest) return
    const { every, until } = this.options
    const dirOf = (version: number) => join(this.options.checkpointsDir, `step-${version}`)
    // The newest multiple reached and below the step budget.
    let newest = Math.floor(latest.version / every) * every
    if (until !== undefined && newest >= until) newest = Math.ceil(until / every) * every - every
    if (newest < this.next) return
    for (let version = this.next; version < newest; version += every)
      this.skip({ version, usedSeqs: [], dir: dirOf(version) }, 'superseded')
    this.next = newest + every
    const checkpoint =
      newest === latest.version ? latest : { version: newest, usedSeqs: [], dir: dirOf(newest) }
    if (newest !== latest.version && !existsSync(checkpoint.dir)) {
      this.skip(checkpoint, 'pruned')
      return
    }
    let kept: PipelineCheckpoint
    try {
      kept = this.options.pin ? this.options.pin(checkpoint) : checkpoint
    } catch (err) {
      this.options.onError?.(err, checkpoint)
      return
    }
    this.wait(kept)
  }

  private start(checkpoint: PipelineCheckpoint): void {
    this.started.push(checkpoint.version)
    this.running = this.options
      .evaluate(checkpoint, this.abort.signal)
      .catch((err) => this.options.onError?.(err, checkpoint))
      .finally(() => {
        this.running = undefined
        this.check()
      })
  }

  /**
   * Stops starting evaluations. With `wait`, resolves when the one in flight is done; the one
   * waiting (and a multiple first seen now) is skipped as `stopped` and released. Without, aborts
   * the one in flight first and keeps the waiting one pinned (a resume evaluates it).
   */
  async stop(options: { wait: boolean }): Promise<void> {
    if (!this.stopped) {
      if (options.wait) this.collect()
      this.stopped = true
      this.clock.clearTimeout(this.timer)
      this.watcher?.close()
      const waiting = this.waiting
      this.waiting = undefined
      if (waiting && options.wait) this.drop(waiting, 'stopped')
    }
    if (!options.wait) this.abort.abort()
    while (this.running) await this.running
  }
}
