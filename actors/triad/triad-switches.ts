import { z } from 'zod'
import type { MetricValues } from '../../protocols/index.ts'
import { TriadConfigError } from './errors.ts'

/**
 * The recipe switches of the dynamic triad (RLAnything, arXiv 2602.02488): each turns one part off so
 * that ablations run from one recipe. Consumed by the env adapter (`adaptiveTasks`), the step-reward
 * path of the learner (`stepReward`) and the reward-model trainer (`trainRewardModel`).
 */
export interface TriadSwitches {
  /** Env adapter changes task difficulty from measured accuracy. Off: every task stays at its default level. */
  adaptiveTasks: boolean
  stepReward: {
    /** The policy reward adds the reward model's step judgements. Off: `R_j = O` (no judge calls). */
    enabled: boolean
    /** Weight of the mean judgement in `R_j = O + lambda * mean_l S_jl`. */
    lambda: number
    /** Judgements per step. */
    m: number
    /**
     * Trust gate: a batch uses the step rewards only when the reward model's online balanced
     * accuracy (its newest labelled judgements pooled, `OnlineStepAccuracy`) against the tasks' own
     * step labels (`step_good/<j>`: mean of the recall on good and on bad steps, both present)
     * reaches this; otherwise its advantages come from outcomes alone. A
     * judge that is not yet better than chance (a fresh reward model) would only add noise: in a
     * group whose outcomes are all equal the z-scored step rewards are pure judge noise. 0 turns
     * the gate off.
     */
    minAccuracy: number
    /**
     * Share of groups whose steps the reward model judges, in [0, 1] (drawn per group on the
     * rollout side; default 1). The other groups train on outcomes alone and give the reward
     * model nothing to learn from: a knob for the judging cost, which on one CPU is about that of
     * generating the episodes.
     */
    judgeShare?: number
    /**
     * Temperature the reward model samples its m verdicts at (> 0; default 1). Below 1 the sampled
     * verdicts follow the judge's most likely verdict more often (its greedy accuracy is the limit
     * at 0) and agree more often within a step; the consistency update takes the verdicts'
     * log-probabilities at the same temperature.
     */
    temperature?: number
  }
  /** The learner trains the reward model by its consistency reward. Off: the reward model stays frozen. */
  trainRewardModel: boolean
}

/** Everything on, lambda 0.5, m 3, trust gate 0.6 (the recipe defaults, `recipes/recipe-schema.ts` TriadSchema, which a recipe's `triad` block fits as it is). */
export const TRIAD_SWITCHES_DEFAULTS: Readonly<TriadSwitches> = Object.freeze({
  adaptiveTasks: true,
  stepReward: Object.freeze({ enabled: true, lambda: 0.5, m: 3, minAccuracy: 0.6 }),
  trainRewardModel: true,
})

/** Every part off: plain outcome-reward GRPO on fixed tasks. */
export const TRIAD_SWITCHES_OFF: Readonly<TriadSwitches> = Object.freeze({
  adaptiveTasks: false,
  stepReward: Object.freeze({ enabled: false, lambda: 0.5, m: 3, minAccuracy: 0.6 }),
  trainRewardModel: false,
})

const SwitchesSchema = z.object({
  adaptiveTasks: z.boolean().default(TRIAD_SWITCHES_DEFAULTS.adaptiveTasks),
  stepReward: z
    .object({
      enabled: z.boolean().default(TRIAD_SWITCHES_DEFAULTS.stepReward.enabled),
      lambda: z.number().nonnegative().finite().default(TRIAD_SWITCHES_DEFAULTS.stepReward.lambda),
      m: z.number().int().positive().max(64).default(TRIAD_SWITCHES_DEFAULTS.stepReward.m),
      minAccuracy: z.number().min(0).max(1).default(TRIAD_SWITCHES_DEFAULTS.stepReward.minAccuracy),
      judgeShare: z.number().min(0).max(1).optional(),
      temperature: z.number().positive().finite().optional(),
    })
    .default({ ...TRIAD_SWITCHES_DEFAULTS.stepReward }),
  trainRewardModel: z.boolean().default(TRIAD_SWITCHES_DEFAULTS.trainRewardModel),
})

/**
 * Reads switches from a recipe value, filling defaults.
 * @throws TriadConfigError listing each bad field.
 */
export function parseTriadSwitches(value: unknown = {}): TriadSwitches {
  const parsed = SwitchesSchema.safeParse(value)
  if (!parsed.success)
    throw new TriadConfigError(
      parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
    )
  return parsed.data
}

/**
 * The switches as metric values (`triad/switch/<name>`: 1 on, 0 off), so every metrics file records
 * which parts ran.
 */
export function switchMetrics(s: TriadSwitches): MetricValues {
  return {
    'triad/switch/adaptive_tasks': s.adaptiveTasks ? 1 : 0,
    'triad/switch/step_reward': s.stepReward.enabled ? 1 : 0,
    'triad/switch/train_reward_model': s.trainRewardModel ? 1 : 0,
  }
}
