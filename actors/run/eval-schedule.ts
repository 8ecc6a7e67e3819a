import { existsSync, type FSWatcher, mkdirSync, watch } from 'node:fs'
import { join } from 'node:path'
import { type PipelineCheckpoint, readLatestCheckpoint } from '../pipeline/index.ts'
import { type Clock, systemClock } from '../runtime/index.ts'

/** Options of `EvalSchedule`. */
export interface EvalScheduleOptions {
  /** The run's `checkpoints/` (its `latest.json` is watched). */
  checkpointsDir: string
  /** Learner steps between evaluations, > 0. */
  every: number
  /** Checkpoints of this version or later are left to the end-of-run evaluation (the step budget). */
  until?: number
  /**
   * Checkpoints to evaluate first, in this order, whatever `every` and `until` say: the
   * evaluations a stopped run left unfinished. The first starts in the constructor.
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
  /** Called when an evaluation failed or its checkpoint could not be pinned (the schedule goes on). */
  onError?: (err: unknown, checkpoint: PipelineCheckpoint) => void
  /** Called for a due step whose checkpoint (`step-<n>/`) was gone before it was seen. */
  onSkip?: (checkpoint: PipelineCheckpoint) => void
  clock?: Clock
  /** How often `latest.json` is read besides the file-system events, ms (default 1,000). */
  pollMs?: number
}

/** The smallest multiple of `every` above `version`. */
export const nextEvaluationStep = (version: number, every: number) =>
  (Math.floor(version / every) + 1) * every

/**
 * The periodic evaluation of a run: evaluates the checkpoint of every multiple of `every` that the
 * learner reaches below `until` (the first is the multiple after the version the run starts from;
 * the learner checkpoints at each of them), one evaluation at a time, in step order. It watches
 * `latest.json` (file-system events, and a poll every `pollMs`), so the learner never waits for
 * it. A multiple reached while an evaluation runs is queued, its checkpoint kept by `pin` at once
 * (pruning would delete it before its turn); a multiple that `latest.json` went past between two
 * looks is taken from `checkpoints/step-<n>/` (`onSkip` when that is gone). The `pending`
 * checkpoints (a resumed run's interrupted evaluations) go first, the first one at once.
 */
export class EvalSchedule {
  private next: number
  private running: Promise<void> | undefined
  private stopped = false
  /** Stopped with `wait`: the pending checkpoints are still evaluated. */
  private draining = false
  private timer: unknown
  private watcher: FSWatcher | undefined
  private readonly abort = new AbortController()
  private readonly clock: Clock
  private readonly pending: PipelineCheckpoint[]
  /** Versions whose evaluation was started, in order. */
  readonly started: number[] = []

  /** @throws RangeError when `every` is not a positive integer. */
  constructor(private readonly options: EvalScheduleOptions) {
    if (!(Number.isInteger(options.every) && options.every > 0))
      throw new RangeError(
        `evaluation every must be a positive integer of learner steps, got ${options.every}`,
      )
    this.clock = options.clock ?? systemClock
    this.pending = [...(options.pending ?? [])]
    this.next = nextEvaluationStep(readLatestCheckpoint(options.checkpointsDir)?.version ?? 0, options.every)
    mkdirSync(options.checkpointsDir, { recursive: true })
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

  private poll(): void {
    this.timer = this.clock.setTimeout(() => {
      if (this.stopped) return
      this.check()
      this.poll()
    }, this.options.pollMs ?? 1_000)
    ;(this.timer as { unref?: () => void })?.unref?.()
  }

  /**
   * Reads `latest.json`, queues (and pins) every multiple of `every` reached since the last look,
   * and starts the next queued evaluation when none runs.
   */
  check(): void {
    if (!this.stopped) this.collect()
    if (this.running || (this.stopped && !(this.draining && this.pending.length > 0))) return
    const pending = this.pending.shift()
    if (pending) this.start(pending)
  }

  /** Queues the due multiples up to the latest checkpoint's version. */
  private collect(): void {
    let latest: PipelineCheckpoint | undefined
    try {
      latest = readLatestCheckpoint(this.options.checkpointsDir)
    } catch {
      return // being replaced; the next event or poll reads it again
    }
    const { every, until } = this.options
    while (latest && latest.version >= this.next && (until === undefined || this.next < until)) {
      const version = this.next
      this.next += every
      const checkpoint =
        version === latest.version
          ? latest
          : { version, usedSeqs: [], dir: join(this.options.checkpointsDir, `step-${version}`) }
      if (version !== latest.version && !existsSync(checkpoint.dir)) {
        this.options.onSkip?.(checkpoint)
        continue
      }
      try {
        this.pending.push(this.options.pin ? this.options.pin(checkpoint) : checkpoint)
      } catch (err) {
        this.options.onError?.(err, checkpoint)
      }
    }
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
   * Stops starting evaluations. With `wait`, resolves when the one in progress and the pending
   * ones are done; without, aborts the one in progress first (the pending ones stay undone).
   */
  async stop(options: { wait: boolean }): Promise<void> {
    if (options.wait && !this.stopped) this.collect()
    this.stopped = true
    this.draining = options.wait
    this.clock.clearTimeout(this.timer)
    this.watcher?.close()
    if (!options.wait) this.abort.abort()
    this.check()
    while (this.running) await this.running
  }
}
