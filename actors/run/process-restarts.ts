import {
  type MetricKey,
  MetricsReport,
  type MetricValues,
  metricRecord,
  Subjects,
} from '../../protocols/index.ts'
import { type Clock, systemClock, type Transport } from '../runtime/index.ts'

/** The metric key of the restarts of one supervised process: `process/<name>/restarts`. */
export const processRestartsKey = (name: string): MetricKey => `process/${name}/restarts`

/** The metric key of a run's step budget (`budget.maxSteps` of its recipe), reported by role `run`. */
export const RUN_MAX_STEPS = 'run/max_steps'

/**
 * The metric key of a run's last report (role `run`): 1 once its roles have stopped, so that a
 * `triad monitor` elsewhere knows the run ended instead of drawing its last numbers.
 */
export const RUN_ENDED = 'run/ended'

/** With `run/ended`: 1 when the run stopped at its step or time budget, 0 when interrupted or failed. */
export const RUN_FINISHED = 'run/finished'

/** Options of `ProcessRestartReport`. */
export interface ProcessRestartReportOptions {
  /** Run id (the `<run>` subject token). */
  run: string
  /** Reporter id (the `triad run` process id). */
  id: string
  /** The learner step to stamp reports with (the newest the run has seen). */
  step: () => number
  /** Names of the supervised processes (reported from the start, at 0). */
  names: readonly string[]
  /**
   * Facts of the run sent with every report, so a monitor that joins later learns them too:
   * `run/max_steps` (the recipe's step budget), which ends the progress bar of `triad monitor`.
   */
  values?: Readonly<MetricValues>
  /** Reports are repeated this often, ms (default 10,000), so a monitor that joins later sees them. */
  everyMs?: number
  clock?: Clock
}

/**
 * Counts the process supervisor's restarts of each of a run's processes (the learner, the rollout)
 * and reports them as metrics of role `run`: `process/<name>/restarts`, the count since this
 * `triad run` started, plus the run's constant `values` (`run/max_steps`). A report goes out at
 * each restart and every `everyMs`; the live view and `triad monitor` add the restarts to the
 * actor restarts.
 */
export class ProcessRestartReport {
  private readonly counts = new Map<string, number>()
  private readonly clock: Clock
  private timer: unknown
  private stopped = false

  constructor(
    private readonly transport: Transport,
    private readonly options: ProcessRestartReportOptions,
  ) {
    this.clock = options.clock ?? systemClock
    for (const name of options.names) this.counts.set(name, 0)
    this.publish()
    this.schedule()
  }

  /** Restarts so far, by process name. */
  restarts(): Record<string, number> {
    return Object.fromEntries(this.counts)
  }

  /**
   * Feeds one process supervisor event (`ProcessEvent` of `actors/launcher/`, which sits above
   * this folder: only the fields read here): an exit followed by a restart counts one and is
   * reported at once.
   */
  onEvent<E extends { type: string; name: string; next?: string }>(e: E): void {
    if (e.type !== 'exited' || e.next !== 'restart') return
    this.counts.set(e.name, (this.counts.get(e.name) ?? 0) + 1)
    this.publish()
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      if (this.stopped) return
      this.publish()
      this.schedule()
    }, this.options.everyMs ?? 10_000)
    ;(this.timer as { unref?: () => void })?.unref?.()
  }

  private publish(extra: MetricValues = {}): void {
    if (this.stopped) return
    const values: MetricValues = { ...this.options.values, ...extra }
    for (const [name, n] of this.counts) values[processRestartsKey(name)] = n
    try {
      this.transport.publish(
        Subjects.metrics(this.options.run, 'run'),
        MetricsReport.make({
          role: 'run',
          id: this.options.id,
          step: this.options.step(),
          time: this.clock.now(),
          values: metricRecord(values),
        }),
      )
    } catch {
      // A closed or reconnecting connection: metrics are observations; the next report carries the count.
    }
  }

  /**
   * Sends a last report and stops reporting. With `outcome` the last report says the run ended
   * (`run/ended` 1, and `run/finished` 1 at its budget, 0 otherwise).
   */
  stop(outcome?: { finished: boolean }): void {
    this.publish(outcome ? { [RUN_ENDED]: 1, [RUN_FINISHED]: outcome.finished ? 1 : 0 } : {})
    this.stopped = true
    this.clock.clearTimeout(this.timer)
  }
}
