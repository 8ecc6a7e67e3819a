import {
  AdamW,
  type AdamWConfig,
  createRng,
  type OverlongConfig,
  REWARD_MODEL_STEP_DEFAULTS,
  type RewardModelStepConfig,
  signedOutcome,
} from '../../gpu/index.ts'
import {
  type MetricKey,
  type MetricValues,
  metricEntries,
  type Trajectory,
  type TrajectoryGroupPayload,
} from '../../protocols/index.ts'
import { judgedStepsSeedOf, runSeeds } from '../runtime/index.ts'
import { policyStepAdvantages } from './policy-step-reward.ts'
import { RewardModel, type RewardModelOptions } from './reward-model.ts'
import { buildRewardModelBatch, type JudgedStep, trainRewardModelStep } from './reward-training.ts'
import { switchMetrics, type TriadSwitches } from './triad-switches.ts'

/**
 * The learner side of the dynamic triad (RLAnything, arXiv 2602.02488): the step rewards of each
 * group become the token advantages of the RL batch, and the reward model takes one consistency
 * step per learner step on the judgements the trajectories carry. The tensor math is in `gpu/`
 * (`step-reward.ts`, `consistency-reward.ts`, `reward-model-step.ts`); this only moves data between
 * the groups and it.
 */

/**
 * A sample's judgements as `policyStepAdvantages` takes them: `[turn_starts * m]`, cut to the
 * turns the (context-cut) tokens still hold; undefined when the sample was not judged or its
 * judgements do not cover its turns.
 */
function sampleJudgements(s: Trajectory, m: number): Int8Array | undefined {
  const need = s.turn_starts.length * m
  if (!s.judgements || s.judgements.length < need) return undefined
  return s.judgements.subarray(0, need)
}

/**
 * RLAnything's step advantages of whole groups (`policyStepAdvantages` per group:
 * `R_j = O + lambda * mean_l S_jl`, z-scored per step index), one row per sample in packing order
 * (group by group, sample by sample), each `[seqLen_i]` float32: the `stepAdvantages` the learner
 * packs with the groups (`Learner.step`, `packGroups`), so a group is packed once, by the learner.
 * `options.overlong` (the RL step's overlong shaping) shapes the outcome O the step rewards are
 * built from, as the outcome path shapes the rewards.
 * @returns the rows and metrics: `reward/step_judged` summed over groups,
 *   `reward_model/step_accuracy` over the groups that had labelled judged steps (mean), the other
 *   `reward/*` values averaged over groups, and the switch states.
 *   `reward/malformed_groups` counts groups whose judgements could not be used (their steps got
 *   `R_j = O`).
 * @throws ShapeError on bad turn starts.
 */
export function stepRewardAdvantages(
  groups: readonly TrajectoryGroupPayload[],
  switches: TriadSwitches,
  options: { overlong?: OverlongConfig } = {},
): { stepAdvantages: Float32Array[]; metrics: MetricValues } {
  const m = switches.stepReward.m
  const rows: Float32Array[] = []
  const sums = new Map<MetricKey, { total: number; n: number }>()
  let malformed = 0
  for (const g of groups) {
    let r: ReturnType<typeof policyStepAdvantages>
    try {
      r = policyStepAdvantages(
        g.samples,
        g.samples.map((s) => sampleJudgements(s, m)),
        switches,
        options.overlong,
      )
    } catch {
      // Judgements that do not fit the group (a bad value, offsets out of order): its steps get
      // the outcome only, and the group is counted.
      malformed++
      r = policyStepAdvantages(
        g.samples,
        g.samples.map(() => undefined),
        switches,
        options.overlong,
      )
    }
    rows.push(...r.tokenAdvantages)
    for (const [k, v] of metricEntries(r.metrics)) {
      const sum = sums.get(k) ?? { total: 0, n: 0 }
      sum.total += v
      sum.n++
      sums.set(k, sum)
    }
  }
  const metrics: MetricValues = { ...switchMetrics(switches), 'reward/malformed_groups': malformed }
  for (const [k, { total, n }] of sums) metrics[k] = COUNTS.has(k) ? total : total / n
  const balanced = balancedStepAccuracy(metrics)
  if (balanced !== undefined) metrics['reward_model/step_balanced_accuracy'] = balanced
  return { stepAdvantages: rows, metrics }
}

/** Metrics of `policyStepAdvantages` that add up over groups (the others are averaged). */
const COUNTS = new Set<MetricKey>([
  'reward/step_judged',
  'reward_model/labelled_good',
  'reward_model/right_good',
  'reward_model/labelled_bad',
  'reward_model/right_bad',
])

/**
 * Balanced accuracy of the judgements against the step labels: the mean of the recall on good
 * steps and on bad steps; undefined unless both kinds were judged (a judge that always says `+`
 * scores 0.5 whatever the share of good steps).
 */
export function balancedStepAccuracy(metrics: Readonly<MetricValues>): number | undefined {
  const good = metrics['reward_model/labelled_good'] ?? 0
  const bad = metrics['reward_model/labelled_bad'] ?? 0
  if (good === 0 || bad === 0) return undefined
  return (
    ((metrics['reward_model/right_good'] ?? 0) / good + (metrics['reward_model/right_bad'] ?? 0) / bad) / 2
  )
}

/**
 * Whether a batch may use its step rewards: the switch is on and the reward model's online balanced
 * accuracy (`reward_model/online_balanced_accuracy`, `OnlineStepAccuracy`: pooled over the newest
 * labelled judgements, this batch's included) reaches the trust gate (`stepReward.minAccuracy`; 0
 * always passes). Not the batch's own balanced accuracy: a batch carries the judgements of the few
 * groups the reward model judged (`judgeShare`), often with no labelled bad step (undefined) or a
 * handful (a judge of 0.75 then measures anywhere from 0.5 to 1).
 */
export function stepRewardsTrusted(switches: TriadSwitches, metrics: Readonly<MetricValues>): boolean {
  if (!switches.stepReward.enabled) return false
  if (switches.stepReward.minAccuracy <= 0) return true
  const pooled = metrics['reward_model/online_balanced_accuracy']
  return pooled !== undefined && pooled >= switches.stepReward.minAccuracy
}

/** Every judged step of the groups, as the reward model's trainer takes them. */
export function judgedSteps(groups: readonly TrajectoryGroupPayload[], m: number): JudgedStep[] {
  const out: JudgedStep[] = []
  for (const g of groups)
    for (const s of g.samples) {
      const prompts = s.judge_prompts
      if (!prompts || !s.judgements || !s.judge_tokens || !s.judge_logprobs) continue
      if (s.judgements.length !== prompts.length * m) continue
      prompts.forEach((prompt, j) => {
        const at = j * m
        out.push({
          prompt,
          outcome: s.reward,
          tokens: s.judge_tokens!.subarray(at, at + m),
          logprobs: s.judge_logprobs!.subarray(at, at + m),
          judgements: s.judgements!.subarray(at, at + m),
        })
      })
    }
  return out
}

/**
 * The steps of one reward-model update: as many from solved episodes (signed outcome `O = 2r - 1`
 * above 0) as from failed ones (O below 0), at most `cap` in all, drawn without replacement
 * (seeded) with the informative ones first on each side. A step whose m judgements do not all
 * agree has non-zero consistency advantages; one whose judgements agree has all-zero advantages
 * and adds nothing to the GRPO-TCR loss. The balance keeps the judge from learning the share of
 * failed episodes instead of the steps: on the quickstart's policy most judged steps come from
 * failed episodes (longer, and more of them), and ten unbalanced updates replayed on them took the
 * judge from saying `-` to 66% of good steps to 95% (balanced accuracy of its sampled verdicts 0.54
 * to 0.51); balanced, twenty updates took it to 41% (sampled 0.54 to 0.64, greedy 0.52 to 0.74).
 * Bounds the cost of an update (each step is a forward/backward pass over its judge prompt).
 * @returns `2 * min(solved, failed, floor(cap / 2))` steps (steps with O = 0 are never drawn), or,
 *   when the steps are all of solved or all of failed episodes, at most `cap` of them, mixed first
 *   (nothing to balance: the judge of a policy that fails everything still trains).
 */
export function sampleJudgedSteps(judged: readonly JudgedStep[], cap: number, seed: number): JudgedStep[] {
  const rng = createRng(seed)
  const shuffled = (xs: JudgedStep[]) => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(rng.next() * (i + 1))
      ;[xs[i], xs[j]] = [xs[j]!, xs[i]!]
    }
    return xs
  }
  const mixed = (s: JudgedStep) => {
    for (let l = 1; l < s.judgements.length; l++) if (s.judgements[l] !== s.judgements[0]) return true
    return false
  }
  const side = (steps: JudgedStep[]) => [
    ...shuffled(steps.filter(mixed)),
    ...shuffled(steps.filter((s) => !mixed(s))),
  ]
  const solved = side(judged.filter((s) => signedOutcome(s.outcome) > 0))
  const failed = side(judged.filter((s) => signedOutcome(s.outcome) < 0))
  if (solved.length === 0 || failed.length === 0) return side([...judged]).slice(0, cap)
  const k = Math.min(solved.length, failed.length, Math.floor(cap / 2))
  return [...solved.slice(0, k), ...failed.slice(0, k)]
}

/**
 * The reward model the learner trains: same family as the policy, its own weights (from the seed
 * the reward actor starts from; its own LoRA adapters on the shared base of a pretrained policy)
 * and its own AdamW over them.
 */
export class RewardModelLearner {
  readonly rm: RewardModel
  /** The reward model's own AdamW (its moments go into the checkpoint). */
  readonly optimizer: AdamW
  /** Reward-model updates taken. */
  updates = 0
  /**
   * Settings of each consistency update: DemyAgent's GRPO-TCR loss, and the temperature the
   * verdicts were sampled at (`stepReward.temperature`, default 1).
   */
  readonly stepConfig: RewardModelStepConfig

  /**
   * @param model what the reward model is: triad's own (`config`, `tokenizer`) or the adapters on a
   *   pretrained base (`pretrained`), as `RewardModelOptions` (its seed is `runSeeds(seed).rewardModel`).
   * @throws ConfigError as `new RewardModel`.
   */
  constructor(
    model: Pick<RewardModelOptions, 'config' | 'tokenizer' | 'pretrained'>,
    seed: number,
    private readonly lr: number,
    private readonly switches: TriadSwitches,
    /** Most judged steps one update trains on (default 64). */
    private readonly maxStepsPerUpdate = 64,
    /** AdamW settings: the policy's (`rl.weightDecay`, `rl.gradClip`); AdamW's defaults when absent. */
    optimizer: AdamWConfig = {},
  ) {
    this.rm = new RewardModel({ ...model, seed: runSeeds(seed).rewardModel })
    this.stepConfig = { ...REWARD_MODEL_STEP_DEFAULTS, temperature: switches.stepReward.temperature ?? 1 }
    this.optimizer = new AdamW(this.rm.model.params, optimizer)
  }

  /**
   * One consistency step on the judgements the groups carry (`buildRewardModelBatch`,
   * `trainRewardModelStep`); nothing when the switch is off or no step was judged.
   * @returns the step's `reward_model/*` metrics (with `reward_model/updates` the total so far),
   *   and whether the weights changed.
   */
  async step(
    groups: readonly TrajectoryGroupPayload[],
  ): Promise<{ metrics: MetricValues; trained: boolean }> {
    const off = { 'triad/switch/train_reward_model': this.switches.trainRewardModel ? 1 : 0 }
    if (!this.switches.trainRewardModel) return { metrics: off, trained: false }
    const judged = judgedSteps(groups, this.switches.stepReward.m)
    if (judged.length === 0)
      return { metrics: { ...off, 'reward_model/updates': this.updates }, trained: false }
    const steps = sampleJudgedSteps(judged, this.maxStepsPerUpdate, judgedStepsSeedOf(this.updates))
    const { batch, metrics } = buildRewardModelBatch(steps)
    metrics['reward_model/steps_judged'] = judged.length
    metrics['reward_model/steps_trained'] = steps.length
    const train = await trainRewardModelStep(
      { model: this.rm.model, optimizer: this.optimizer, lr: this.lr },
      batch,
      this.switches,
      this.stepConfig,
      this.rm.verdicts,
    )
    const trained = (train['reward_model/updates'] ?? 0) > 0
    if (trained) this.updates++
    return { metrics: { ...metrics, ...train, 'reward_model/updates': this.updates }, trained }
  }

  weights(): Promise<Record<string, Float32Array>> {
    return this.rm.getWeights()
  }
}
