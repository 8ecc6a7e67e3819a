import type { Clock, MetricsLine } from '../../actors/index.ts'
import { systemClock } from '../../actors/index.ts'
import { MetricsState, renderSnapshot, sftRunning } from './metrics-state.ts'

/** Options of `LiveView`. */
export interface LiveViewOptions {
  run: string
  /** End of the learner-step progress bar (the recipe's `budget.maxSteps`). */
  maxSteps?: number
  /**
   * The run's time budget, minutes (the recipe's `budget.maxMinutes`), counted from the view's
   * creation: the header shows the time used of it and the bar follows it when it is further along
   * than the steps.
   */
  maxMinutes?: number
  /** Redraw in place (a terminal): every `ttyEveryMs`; otherwise append a snapshot every `plainEveryMs`. */
  tty: boolean
  /** Where the text goes (default: stdout). */
  write?: (text: string) => void
  clock?: Clock
  /** Redraw interval on a terminal, ms (default 2,000). */
  ttyEveryMs?: number
  /** Interval of appended snapshots elsewhere (CI, a pipe), ms (default 30,000). */
  plainEveryMs?: number
  /** Characters of the progress bars (default 30). */
  barSize?: number
}

/** The phase a snapshot shows: nothing yet, the cold-start SFT, or RL. */
type Phase = 'waiting' | 'sft' | 'rl'

/**
 * The live view of `triad run`: the monitor's snapshot (`renderSnapshot`: the cold-start SFT's
 * progress while it runs, then learner steps or time against the budget, success and reward per task, tokens/s, staleness,
 * loss, restarts) kept under the log lines. On a terminal it is redrawn in place; elsewhere a
 * snapshot is appended every `plainEveryMs` and whenever the phase changes (SFT starts, RL
 * starts), so a log shows the SFT's progress and the start of RL without waiting for the timer.
 */
export class LiveView {
  readonly state = new MetricsState()
  private readonly write: (text: string) => void
  private readonly clock: Clock
  private drawn = 0
  private phase: Phase = 'waiting'
  private timer: unknown
  private stopped = false
  /** When the view was made (the run's start), ms on `clock`. */
  private readonly started: number

  constructor(private readonly options: LiveViewOptions) {
    this.write = options.write ?? ((text) => process.stdout.write(text))
    this.clock = options.clock ?? systemClock
    this.started = this.clock.now()
    this.schedule()
  }

  private schedule(): void {
    const every = this.options.tty
      ? (this.options.ttyEveryMs ?? 2_000)
      : (this.options.plainEveryMs ?? 30_000)
    this.timer = this.clock.setTimeout(() => {
      if (this.stopped) return
      this.draw()
      this.schedule()
    }, every)
    ;(this.timer as { unref?: () => void })?.unref?.()
  }

  private clear(): void {
    if (this.options.tty && this.drawn > 0) this.write(`\x1b[${this.drawn}A\x1b[0J`)
    this.drawn = 0
  }

  /** Draws the snapshot now (under the log lines). */
  draw(): void {
    const text = renderSnapshot(this.state, {
      run: this.options.run,
      maxSteps: this.options.maxSteps,
      barSize: this.options.barSize,
      time: this.options.maxMinutes
        ? { elapsedMs: this.clock.now() - this.started, limitMs: this.options.maxMinutes * 60_000 }
        : undefined,
    })
    this.clear()
    this.write(`${text}\n`)
    if (this.options.tty) this.drawn = text.split('\n').length
  }

  /** Adds one metrics line; draws at once when the phase changed (SFT started, RL started). */
  add(line: MetricsLine): void {
    this.state.add(line)
    const phase: Phase = sftRunning(this.state)
      ? 'sft'
      : this.state.step > 0 || this.state.sft
        ? 'rl'
        : 'waiting'
    if (phase !== this.phase) {
      this.phase = phase
      this.draw()
    }
  }

  /** Prints a log line above the view. */
  log(line: string): void {
    this.clear()
    this.write(`${line}\n`)
  }

  /** Stops redrawing; draws a last snapshot when anything was reported. */
  stop(): void {
    this.stopped = true
    this.clock.clearTimeout(this.timer)
    if (this.state.reports > 0) this.draw()
    this.drawn = 0
  }
}
