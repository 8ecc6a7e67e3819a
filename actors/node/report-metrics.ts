import {
  type MetricsAxis,
  MetricsReport,
  type MetricValues,
  metricRecord,
  Subjects,
} from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'

/**
 * Publishes one `metrics.report` for a role; `axis` says what `step` counts when it is not the
 * learner step (`MetricsAxes`: the cold starts' SFT steps). `values` are typed by the metric
 * catalog's keys (`MetricValues`), so a key the catalog lacks does not compile.
 */
export function reportMetrics(transport: Transport, run: string, role: string, id: string) {
  return (values: MetricValues, step: number, axis?: MetricsAxis) =>
    transport.publish(
      Subjects.metrics(run, role),
      MetricsReport.make({
        role,
        id,
        step,
        ...(axis ? { axis } : {}),
        time: Date.now(),
        values: metricRecord(values),
      }),
    )
}
