import {
  ConfigError,
  computeGroupStepAdvantages,
  type OverlongConfig,
  overlongPenalty,
} from '../../gpu/index.ts'
import type { MetricValues, Trajectory } from '../../protocols/index.ts'
import type { TriadSwitches } from './triad-switches.ts'

/**
 * The policy's side of the dynamic triad: the G samples of one task instance with the reward
 * model's judgements of their steps become token-level advantages for the learner's `RlBatch`
 * (`stepAdvantages`), by `R_j = O + lambda * mean_l S_jl` z-scored per step index
 * (`computeGroupStepAdvantages`). With the `stepReward` switch off the judgements are ignored and
 * `R_j = O`. With overlong shaping on, O is the shaped outcome: the task reward plus the overlong
 * penalty of the sample's trained-token count (DAPO eq. 13, as the outcome path of `rlStep` adds it),
 * so that the step path is shaped too.
 */

/**
 * Ground-truth labels of a trajectory's steps from the task's `step_good/<j>` metrics: +1 good, -1
 * bad, 0 when the task gives no label for step j.
 * @returns `[turns]` int8.
 */
export function stepLabels(t: Pick<Trajectory, 'metrics' | 'turns'>): Int8Array {
  const out = new Int8Array(t.turns)
  for (let j = 0; j < t.turns; j++) {
    const v = t.metrics[`step_good/${j}`]
    if (v !== undefined) out[j] = v > 0 ? 1 : -1
  }
  return out
}

/**
 * Step accuracy of judgements against labels: over the labelled steps (label != 0), the share of
 * judgements equal to the label (an unparseable judgement counts as wrong).
 * @param judgements `[steps * m]` step-major.
 * @param labels `[steps]`: +1, -1, or 0 for unlabelled.
 * @returns the accuracy in [0, 1], or undefined when no step is labelled.
 * @throws ConfigError when the lengths disagree.
 */
export function judgementAccuracy(
  judgements: ArrayLike<number>,
  m: number,
  labels: ArrayLike<number>,
): number | undefined {
  if (judgements.length !== labels.length * m)
    throw new ConfigError('judgements', judgements.length, `expected ${labels.length} steps x m = ${m}`)
  let right = 0
  let total = 0
  for (let j = 0; j < labels.length; j++) {
    if (labels[j] === 0) continue
    for (let l = 0; l < m; l++) {
      total++
      if (judgements[j * m + l] === labels[j]) right++
    }
  }
  return total === 0 ? undefined : right / total
}

/** Judgements of labelled good and bad steps, and how many of them agreed with the label. */
interface LabelCounts {
  labelledGood: number
  rightGood: number
  labelledBad: number
  rightBad: number
}

const newLabelCounts = (): LabelCounts => ({ labelledGood: 0, rightGood: 0, labelledBad: 0, rightBad: 0 })

/** Adds one step's m judgements, `agreed` of which match its label, to `c`. */
function countLabel(c: LabelCounts, good: boolean, m: number, agreed: number): void {
  if (good) {
    c.labelledGood += m
    c.rightGood += agreed
  } else {
    c.labelledBad += m
    c.rightBad += agreed
  }
}

/** Result of `policyStepAdvantages`. */
export interface PolicyStepAdvantages {
  /** Per sample, `[seqLen_i]` float32 token advantages (the rows of `RlBatch.stepAdvantages`). */
  tokenAdvantages: Float32Array[]
  /**
   * - `reward/step_reward_enabled`: the switch (1 on, 0 off);
   * - `reward/step_judged`: steps whose judgements were used (0 when off);
   * - `reward/judgement_mean`: mean of the parseable judgements used (absent when none);
   * - `reward/step_reward_mean`: mean `R_j` over every step;
   * - `reward/step_overlong_penalty`: mean overlong penalty added to the samples' outcomes (with
   *   `overlong`);
   * - `reward_model/step_accuracy`: share of the used judgements that agree with the task's
   *   `step_good/<j>` labels (`judgementAccuracy`), when some used step is labelled;
   * - `reward_model/labelled_good`, `reward_model/right_good`, `reward_model/labelled_bad`,
   *   `reward_model/right_bad`: judgements of labelled good and bad steps and how many agreed
   *   (counts, for a balanced accuracy over many groups);
   * - `reward_model/earlier_steps/labelled_good|right_good|labelled_bad|right_bad`: the same over
   *   every step but its episode's last (whose result, such as `correct` or `wrong`, says its label
   *   outright), which measures the judging of the steps in between.
   */
  metrics: MetricValues
}

/**
 * Token advantages of one group from its outcomes and step judgements.
 * @param samples the G trajectories of one task instance.
 * @param judgements per sample, its `[turns * m]` step-major judgements (+1, -1, 0), or undefined
 *   when it was not judged (its steps then get `R_j = O`). Ignored when the switch is off.
 * @param overlong overlong shaping (`L_max`, `L_buf` in tokens) on `|y|` = the sample's loss-masked
 *   tokens; off when absent.
 * @throws ConfigError when a sample's judgements do not cover its turns; ShapeError on
 *   bad turn starts; ConfigError on a bad overlong config.
 */
export function policyStepAdvantages(
  samples: readonly (Pick<Trajectory, 'reward' | 'turn_starts' | 'loss_mask'> & {
    metrics?: Trajectory['metrics']
  })[],
  judgements: readonly (ArrayLike<number> | undefined)[],
  switches: TriadSwitches,
  overlong?: OverlongConfig,
): PolicyStepAdvantages {
  let penaltySum = 0
  const { enabled, lambda, m } = switches.stepReward
  let judged = 0
  let sSum = 0
  let sCount = 0
  let right = 0
  let labelled = 0
  const every = newLabelCounts()
  const earlier = newLabelCounts() // every step but the episode's last
  const rollouts = samples.map((t, i) => {
    const turns = t.turn_starts.length
    const flat = enabled ? judgements[i] : undefined
    if (flat && flat.length !== turns * m)
      throw new ConfigError(`judgements[${i}]`, flat.length, `expected ${turns} turns x m = ${m}`)
    const perStep: ArrayLike<number>[] = []
    for (let j = 0; j < turns; j++) {
      if (!flat) {
        perStep.push([])
        continue
      }
      const s = Array.prototype.slice.call(flat, j * m, (j + 1) * m) as number[]
      perStep.push(s)
      const label = t.metrics?.[`step_good/${j}`]
      if (label !== undefined) {
        const agreed = s.filter((v) => v === (label > 0 ? 1 : -1)).length
        labelled += m
        right += agreed
        countLabel(every, label > 0, m, agreed)
        if (j < turns - 1) countLabel(earlier, label > 0, m, agreed)
      }
      judged++
      for (const v of s)
        if (v !== 0) {
          sSum += v
          sCount++
        }
    }
    let trained = 0 // position 0 is never trained (no context), as `packGroups` masks it
    for (let k = 1; k < t.loss_mask.length; k++) trained += t.loss_mask[k] ? 1 : 0
    const penalty = overlong ? overlongPenalty(trained, overlong) : 0 // |y| = trained tokens
    penaltySum += penalty
    return {
      outcome: t.reward + penalty, // O = task reward + overlong penalty
      judgements: perStep,
      turnStarts: t.turn_starts,
      lossMask: t.loss_mask,
    }
  })
  const g = computeGroupStepAdvantages(rollouts, enabled ? lambda : 0)
  const all = g.rewards.flatMap((r) => [...r])
  const metrics: MetricValues = {
    'reward/step_reward_enabled': enabled ? 1 : 0,
    'reward/step_judged': judged,
    'reward/step_reward_mean': all.length ? all.reduce((a, b) => a + b, 0) / all.length : 0,
  }
  if (overlong) metrics['reward/step_overlong_penalty'] = samples.length ? penaltySum / samples.length : 0
  if (sCount) metrics['reward/judgement_mean'] = sSum / sCount
  if (labelled) {
    metrics['reward_model/step_accuracy'] = right / labelled
    metrics['reward_model/labelled_good'] = every.labelledGood
    metrics['reward_model/right_good'] = every.rightGood
    metrics['reward_model/labelled_bad'] = every.labelledBad
    metrics['reward_model/right_bad'] = every.rightBad
    metrics['reward_model/earlier_steps/labelled_good'] = earlier.labelledGood
    metrics['reward_model/earlier_steps/right_good'] = earlier.rightGood
    metrics['reward_model/earlier_steps/labelled_bad'] = earlier.labelledBad
    metrics['reward_model/earlier_steps/right_bad'] = earlier.rightBad
  }
  return { tokenAdvantages: g.tokenAdvantages, metrics }
}
