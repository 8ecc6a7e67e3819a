import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * The step axes of a `metrics.report`: what its `step` counts. Absent means `learner`.
 * - `learner`: the learner step (policy version) of the RL loop;
 * - `sft`: the optimizer step of the policy's cold-start SFT (keys `sft/...`);
 * - `reward_model_sft`: the optimizer step of the reward model's cold start (keys `reward_model/sft/...`).
 */
export const MetricsAxes = {
  learner: 'learner',
  sft: 'sft',
  rewardModelSft: 'reward_model_sft',
} as const

/** One of `MetricsAxes`. */
export type MetricsAxis = (typeof MetricsAxes)[keyof typeof MetricsAxes]

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
    /** The step the numbers belong to, on `axis`: by default the learner step (policy version). */
    step: z.number().int().nonnegative(),
    /** What `step` counts (`MetricsAxes`); absent: the learner step. */
    axis: z.enum([MetricsAxes.learner, MetricsAxes.sft, MetricsAxes.rewardModelSft]).optional(),
    /** Wall-clock time of the measurement, ms since the Unix epoch. */
    time: z.number(),
    values: z.record(z.string(), z.number()),
  }),
)

export const metricsMessages = [MetricsReport] as const
