import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { MetricsLine } from './metrics-file.ts'
import { fileVersionEvent, scalarsEvent } from './tf-event.ts'
import { tfRecord } from './tfrecord.ts'

/** The folder of a run's TensorBoard event files, beside `metrics.jsonl`. */
export const TENSORBOARD_DIR = 'tensorboard'

/**
 * The TensorBoard run name (sub-folder) of one reporter: `<role>/<id>`, each part cut to the
 * characters `[A-Za-z0-9._-]` (others become `_`), so two reporters of one key overlay in one
 * chart instead of mixing in one series.
 */
export function tensorboardRunName(role: string, id: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_') || '_'
  return `${clean(role)}/${clean(id)}`
}

/** The step of one reporter's pending scalars: `axis` (absent: the learner) and `step`. */
interface Pending {
  axis: string
  step: number
  /** Wall time of the newest report merged in, ms since the epoch. */
  time: number
  values: Map<string, number>
}

/** One reporter's event file and the scalars of its current step not yet written. */
interface Reporter {
  fd: number
  pending?: Pending
}

/** Options of `TensorBoardWriter`. */
export interface TensorBoardWriterOptions {
  /** Root folder of the event files (the run's `tensorboard/`); created when missing. */
  dir: string
  /** Clock for the file names, ms since the epoch; default `Date.now`. */
  now?: () => number
}

let fileCounter = 0

/**
 * Writes metrics lines as TensorBoard event files: one folder per reporter
 * (`<dir>/<role>/<id>/events.out.tfevents.<s>.<host>.<pid>.<n>`), one scalar series per key
 * (the key is the tag), at the line's `step` (the SFT step for the cold starts' `sft/...` and
 * `reward_model/sft/...` keys, whose lines carry `axis`). A reporter that reports the same key
 * several times at one step (the periodic reports between two learner steps) gets one point,
 * its last value, written when the reporter's step moves on or at `close`; NaN and infinities
 * are skipped, as in every other view of the metrics. Writes are synchronous appends: a crash
 * loses at most the reporters' current steps, and every record written is whole.
 */
export class TensorBoardWriter {
  private readonly reporters = new Map<string, Reporter>()
  private readonly now: () => number
  private closed = false

  constructor(private readonly options: TensorBoardWriterOptions) {
    this.now = options.now ?? Date.now
  }

  /** Adds one metrics line; the previous step of its reporter is written when this one is another. */
  write(line: MetricsLine): void {
    if (this.closed) return
    const name = tensorboardRunName(line.role, line.id)
    const reporter = this.reporters.get(name) ?? this.open(name)
    const axis = line.axis ?? 'learner'
    const p = reporter.pending
    if (p && (p.axis !== axis || p.step !== line.step)) this.flush(reporter)
    const pending = reporter.pending ?? { axis, step: line.step, time: line.time, values: new Map() }
    reporter.pending = pending
    pending.time = Math.max(pending.time, line.time)
    for (const [key, value] of Object.entries(line.values))
      if (Number.isFinite(value)) pending.values.set(key, value)
  }

  /** Writes every reporter's pending step and closes the files; later writes are ignored. */
  close(): void {
    if (this.closed) return
    this.closed = true
    for (const reporter of this.reporters.values()) {
      this.flush(reporter)
      closeSync(reporter.fd)
    }
    this.reporters.clear()
  }

  private open(name: string): Reporter {
    const folder = join(this.options.dir, ...name.split('/'))
    mkdirSync(folder, { recursive: true })
    const now = this.now()
    const file = join(
      folder,
      `events.out.tfevents.${Math.floor(now / 1000)}.${hostname()}.${process.pid}.${fileCounter++}`,
    )
    const fd = openSync(file, 'a')
    writeSync(fd, tfRecord(fileVersionEvent(now / 1000)))
    const reporter: Reporter = { fd }
    this.reporters.set(name, reporter)
    return reporter
  }

  private flush(reporter: Reporter): void {
    const p = reporter.pending
    reporter.pending = undefined
    if (!p || p.values.size === 0) return
    writeSync(reporter.fd, tfRecord(scalarsEvent(p.time / 1000, p.step, [...p.values])))
  }
}
