import { metricsWildcard, type Transport } from '../../actors/index.ts'
import { MessageRegistry, MetricsReport, type PayloadOf } from '../../protocols/index.ts'

/** One `metrics.report` payload. */
export type Report = PayloadOf<typeof MetricsReport>

/** The metrics reports of a run, collected as they arrive. */
export interface MetricsReports {
  /** Every report so far, in arrival order. */
  reports: Report[]
  /** Ends the subscription; later reports are not collected. */
  stop(): Promise<void>
}

/**
 * Collects every metrics report that any role of run `run` publishes on `transport`
 * (`triad.<run>.metrics.>`) from now on; `onReport` is called after each one is added.
 */
export function collectMetricsReports(
  transport: Transport,
  run: string,
  onReport: (report: Report) => void = () => {},
): MetricsReports {
  const reports: Report[] = []
  const sub = transport.subscribe(metricsWildcard(run), {
    accepts: new MessageRegistry([MetricsReport]),
    handler: (m) => {
      reports.push(m.payload as Report)
      onReport(m.payload as Report)
    },
  })
  return { reports, stop: () => sub.stop() }
}
