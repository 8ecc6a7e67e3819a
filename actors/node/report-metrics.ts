import { type MetricsAxis, MetricsReport, Subjects } from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'

/**
 * Publishes one `metrics.report` for a role; `axis` says what `step` counts when it is not the
 * learner step (`MetricsAxes`: the cold starts' SFT steps).
 */
export function reportMetrics(transport: Transport, run: string, role: string, id: string) {
  return (values: Record<string, number>, step: number, axis?: MetricsAxis) =>
    transport.publish(
      Subjects.metrics(run, role),
      MetricsReport.make({ role, id, step, ...(axis ? { axis } : {}), time: Date.now(), values }),
    )
}
