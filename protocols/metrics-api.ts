import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * Metrics: every role publishes `metrics.report` on `Subjects.metrics(run, role)`; `triad run`
 * appends them to the run's `metrics.jsonl` and `triad monitor` shows them live.
 *
 * Keys are namespaced `area/name[/task]`, for example `rollout/success/calc`, `loss/total` and
 * `policy/clip_frac_high` (the learner), `pipeline/staleness_mean`, `engine/tokens_per_s`.
 */
export const MetricsReport = defineMessage(
  'metrics.report',
  z.object({
    /** Role that measured them (`learner`, `rollout`, `policy`, `reward`, `env`, `env-adapter`). */
    role: z.string(),
    /** Id of the process or actor within the role. */
    id: z.string(),
    /** Learner step (policy version) the numbers belong to. */
    step: z.number().int().nonnegative(),
    /** Wall-clock time of the measurement, ms since the Unix epoch. */
    time: z.number(),
    values: z.record(z.string(), z.number()),
  }),
)

export const metricsMessages = [MetricsReport] as const
