import { ALL_RUNS_METRICS, runOfMetricsSubject, type Transport } from '../../actors/index.ts'
import { MessageRegistry, MetricsReport } from '../../protocols/index.ts'

const accepts = new MessageRegistry([MetricsReport])

/** The runs whose metrics arrived on a server while it was watched. */
export interface RunsSeen {
  /** Run ids seen so far, sorted. */
  runs(): string[]
  stop(): Promise<void>
}

/**
 * Watches `triad.*.metrics.>` and records the run id of every `metrics.report` that arrives: what
 * `triad monitor` lists when the run it waits for publishes nothing (a mistyped run id, or a run
 * on another server).
 */
export function watchRunsSeen(transport: Transport): RunsSeen {
  const seen = new Set<string>()
  const sub = transport.subscribe(ALL_RUNS_METRICS, {
    accepts,
    handler: (_message, subject) => {
      const run = runOfMetricsSubject(subject)
      if (run) seen.add(run)
    },
  })
  return { runs: () => [...seen].sort(), stop: () => sub.stop() }
}
