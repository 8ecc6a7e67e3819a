/**
 * What a metric's values mean over time, which decides how the report combines them:
 * - `gauge`: a measurement (success rate, loss, level); several reports of one actor at a step are
 *   averaged, then the actors are averaged;
 * - `rate`: a throughput (`..._per_s`); averaged per actor, then summed over actors;
 * - `counter`: a total since the reporting process started (episodes, generated tokens); it starts
 *   again from 0 when the process restarts or the run is resumed. The report makes it continuous
 *   (`continuousCounters`) and charts each actor's newest total, summed over actors;
 * - `delta`: a count since the actor's previous report (episodes of one task); the report charts
 *   its running total, summed over actors.
 * Counters and deltas count whole things, so their charted values are integers.
 */
export const MetricKind = {
  gauge: 'gauge',
  rate: 'rate',
  counter: 'counter',
  delta: 'delta',
} as const
export type MetricKind = (typeof MetricKind)[keyof typeof MetricKind]

/**
 * Keys reported as totals since their process started, with where each comes from:
 * the rollout driver, policy router and trajectory publisher (`rollout/...`,
 * `pipeline/backpressure_waits`), the learner loop (`pipeline/dropped_stale`, ...), the step judge
 * (`reward/judge_calls`, `reward/judged_steps`), the reward-model learner (`reward_model/updates`),
 * the difficulty adapter's decisions (`env/adapter/...`) and restarts (`process/<name>/restarts`
 * and every other `.../restarts`).
 */
export const COUNTER_KEYS: readonly RegExp[] = [
  /^rollout\/(episodes|groups|retried|generated_tokens|annotate_failed|annotated_groups)$/,
  /^rollout\/(turns_fresh|turns_stale|stale_fallbacks)$/,
  /^rollout\/failed\/[^/]+$/,
  /^pipeline\/(backpressure_waits|dropped_stale|duplicates_skipped|invalid_groups)$/,
  /^reward\/(judge_calls|judged_steps)$/,
  /^reward_model\/updates$/,
  /^env\/adapter\/(raised|lowered|accepted|dropped)$/,
  /(^|\/)restarts$/,
]

/** Keys reported as counts since the actor's previous report: `rollout/episodes/<task>`. */
export const DELTA_KEYS: readonly RegExp[] = [/^rollout\/episodes\/[^/]+$/]

/** The kind of a metric key (`gauge` for every key not listed as a rate, counter or delta). */
export function metricKind(key: string): MetricKind {
  if (COUNTER_KEYS.some((re) => re.test(key))) return MetricKind.counter
  if (DELTA_KEYS.some((re) => re.test(key))) return MetricKind.delta
  if (/_per_s$/.test(key)) return MetricKind.rate
  return MetricKind.gauge
}
