import { createWriteStream } from 'node:fs'
import { checkToken, MessageRegistry, MetricsReport } from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'
import { formatMetricsLine, type MetricsLine } from './metrics-file.ts'
import { TensorBoardWriter } from './tensorboard-writer.ts'

/** The subject pattern of every metric of one run: `triad.<run>.metrics.>`. */
export const metricsWildcard = (run: string) => `triad.${checkToken(run, 'run id')}.metrics.>`

/** The subject pattern of every metric of every run on a server: `triad.*.metrics.>`. */
export const ALL_RUNS_METRICS = 'triad.*.metrics.>'

/** The run id of a metrics subject (`triad.<run>.metrics.<role>`); undefined for any other subject. */
export function runOfMetricsSubject(subject: string): string | undefined {
  const parts = subject.split('.')
  return parts.length >= 4 && parts[0] === 'triad' && parts[2] === 'metrics' ? parts[1] : undefined
}

const accepts = new MessageRegistry([MetricsReport])

/** Counters of a metrics sink. */
export interface MetricsSinkStats {
  /** Lines appended to the file. */
  written: number
  /** Messages refused at the boundary (not a valid `metrics.report`). */
  invalid: number
}

/** A running metrics sink. */
export interface MetricsSink {
  stats(): MetricsSinkStats
  /** Unsubscribes and waits until every received line is on disk. */
  stop(): Promise<void>
}

/** Options of `startMetricsSink`. */
export interface MetricsSinkOptions {
  /** Run id (the `<run>` subject token). */
  run: string
  /** File the lines are appended to (the run's `metrics.jsonl`); it is never truncated. */
  file: string
  /** Called after each line reached the file. */
  onWrite?: (line: MetricsLine) => void
  /** Called with each message refused at the boundary. */
  onInvalid?: (error: Error, subject: string) => void
  /**
   * Folder of TensorBoard event files (the run's `tensorboard/`, `TensorBoardWriter`); absent:
   * none are written.
   */
  tensorboardDir?: string
  /** Called once when writing the event files failed; they are not written from then on. */
  onTensorBoardError?: (error: Error) => void
  /**
   * Called once when `file` cannot be written (a full disk): lines are dropped from then on and
   * `stop` resolves. Absent: `stop` rejects with the error.
   */
  onWriteError?: (error: Error) => void
}

/**
 * Subscribes to `triad.<run>.metrics.>` and appends every `metrics.report` payload as one JSON
 * line to the run's `metrics.jsonl`, and, with `tensorboardDir`, to TensorBoard event files. Core NATS is at-most-once, so a report published while the
 * sink is disconnected is lost; metrics are observations, not state.
 */
export function startMetricsSink(transport: Transport, options: MetricsSinkOptions): MetricsSink {
  const out = createWriteStream(options.file, { flags: 'a' })
  const counts: MetricsSinkStats = { written: 0, invalid: 0 }
  let streamError: Error | undefined
  out.on('error', (err) => {
    if (streamError) return
    streamError = err
    options.onWriteError?.(err)
  })
  let tensorboard = options.tensorboardDir
    ? new TensorBoardWriter({ dir: options.tensorboardDir })
    : undefined
  const tensorboardFailed = (err: unknown) => {
    tensorboard = undefined
    options.onTensorBoardError?.(err instanceof Error ? err : new Error(String(err)))
  }
  const sub = transport.subscribe(metricsWildcard(options.run), {
    accepts,
    handler: (message) => {
      const line = message.payload as MetricsLine
      try {
        tensorboard?.write(line)
      } catch (err) {
        tensorboardFailed(err)
      }
      out.write(`${formatMetricsLine(line)}\n`, (err) => {
        if (err) return
        counts.written++
        options.onWrite?.(line)
      })
    },
    onInvalid: (error, subject) => {
      counts.invalid++
      options.onInvalid?.(error, subject)
    },
  })
  return {
    stats: () => ({ ...counts }),
    stop: async () => {
      await sub.stop()
      try {
        tensorboard?.close()
      } catch (err) {
        tensorboardFailed(err)
      }
      await new Promise<void>((resolve, reject) => {
        out.end(() => (streamError && !options.onWriteError ? reject(streamError) : resolve()))
      })
    },
  }
}
