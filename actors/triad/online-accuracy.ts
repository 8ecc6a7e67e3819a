import type { MetricKey, MetricValues } from '../../protocols/index.ts'
/**
 * The reward model's online balanced accuracy: its judgements of the steps the policy took in
 * training, against the environment's step labels (`step_good/<j>`), over the newest learner steps.
 * One learner batch holds few labelled steps (the reward model judges a share of the groups, and
 * a batch may have no bad step at all), so its own balanced accuracy is often undefined or noisy;
 * this one pools the newest batches until they hold `window` labelled judgements.
 */

/** Labelled judgements the online balanced accuracy pools over (default of `OnlineStepAccuracy`). */
export const ONLINE_ACCURACY_WINDOW = 256

/** One learner step's labelled judgements: counts from `policyStepAdvantages`' metrics. */
interface Counts {
  labelledGood: number
  rightGood: number
  labelledBad: number
  rightBad: number
}

/**
 * Pools the `reward_model/labelled_good|right_good|labelled_bad|right_bad` counts of the newest
 * learner steps: the fewest newest steps that hold `window` labelled judgements (every step so far
 * before that).
 */
export class OnlineStepAccuracy {
  private readonly steps: Counts[] = []
  private readonly from: 'reward_model/' | 'reward_model/earlier_steps/'
  private readonly names: { labelled: MetricKey; accuracy: MetricKey }

  /**
   * @param window labelled judgements to pool over (>= 1).
   * @param scope which judgements: every labelled step (`all`, the default, which the trust gate
   *   reads), or every step but its episode's last (`earlier_steps`: the counts
   *   `reward_model/earlier_steps/*`, reported with the suffix `_earlier_steps`).
   */
  constructor(
    readonly window: number = ONLINE_ACCURACY_WINDOW,
    scope: 'all' | 'earlier_steps' = 'all',
  ) {
    this.from = scope === 'all' ? 'reward_model/' : 'reward_model/earlier_steps/'
    this.names =
      scope === 'all'
        ? { labelled: 'reward_model/online_labelled', accuracy: 'reward_model/online_balanced_accuracy' }
        : {
            labelled: 'reward_model/online_labelled_earlier_steps',
            accuracy: 'reward_model/online_balanced_accuracy_earlier_steps',
          }
  }

  /** Adds one learner step's counts (absent keys count 0; a step without labelled judgements adds nothing). */
  add(metrics: Readonly<MetricValues>): void {
    const c: Counts = {
      labelledGood: metrics[`${this.from}labelled_good` as const] ?? 0,
      rightGood: metrics[`${this.from}right_good` as const] ?? 0,
      labelledBad: metrics[`${this.from}labelled_bad` as const] ?? 0,
      rightBad: metrics[`${this.from}right_bad` as const] ?? 0,
    }
    if (c.labelledGood + c.labelledBad === 0) return
    this.steps.push(c)
    const size = (x: Counts) => x.labelledGood + x.labelledBad
    let total = this.steps.reduce((a, x) => a + size(x), 0)
    while (this.steps.length > 1 && total - size(this.steps[0]!) >= this.window)
      total -= size(this.steps.shift()!)
  }

  /**
   * - `reward_model/online_labelled`: labelled judgements pooled (0 before any);
   * - `reward_model/online_balanced_accuracy`: `(TPR + TNR) / 2` over them, the mean of the recall on
   *   good and on bad steps; present once both kinds were judged.
   * (With the scope `earlier_steps`, both names end in `_earlier_steps`.)
   */
  metrics(): MetricValues {
    const sum = (k: keyof Counts) => this.steps.reduce((a, x) => a + x[k], 0)
    const [good, bad] = [sum('labelledGood'), sum('labelledBad')]
    const out: MetricValues = { [this.names.labelled]: good + bad }
    if (good > 0 && bad > 0) out[this.names.accuracy] = (sum('rightGood') / good + sum('rightBad') / bad) / 2 // (TPR + TNR) / 2
    return out
  }
}
