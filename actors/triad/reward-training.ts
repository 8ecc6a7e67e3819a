import {
  ConfigError,
  computeConsistencyRewards,
  REWARD_MODEL_STEP_DEFAULTS,
  type RewardModelBatch,
  type RewardModelStepConfig,
  type RewardModelTrainState,
  rewardModelStep,
  signedOutcome,
  UNPARSEABLE_PENALTY,
  type VerdictTokens,
} from '../../gpu/index.ts'
import type { MetricValues } from '../../protocols/index.ts'
import { TRIAD_VERDICT_TOKENS } from './judge-prompt.ts'
import type { TriadSwitches } from './triad-switches.ts'

/**
 * Training the reward model by consistency (RLAnything, arXiv 2602.02488;
 * docs/design.md#algorithms): each sampled verdict token is a one-token "response" to its judge
 * prompt; its reward is the consistency reward `(O + mean S) * S_l` with the signed outcome
 * `O = 2r - 1` (a fixed penalty when unparseable), z-scored across the m judgements of the step,
 * and that z-score is the token's advantage. This file builds that batch from the judged steps; the
 * update itself is `rewardModelStep` (`gpu/reward-model-step.ts`), the policy's GRPO-TCR loss on
 * the `[steps, m]` verdict matrix.
 */

/** One judged step, as the learner has it. */
export interface JudgedStep {
  /** The judge prompt the verdicts were sampled after, `[promptLen]` int32. */
  prompt: Int32Array
  /** Task reward r in [0, 1] of the episode the step belongs to; it enters the consistency reward as `O = 2r - 1`. */
  outcome: number
  /** `[m]` sampled verdict token ids. */
  tokens: ArrayLike<number>
  /** `[m]` their log-probabilities under the sampling distribution. */
  logprobs: ArrayLike<number>
  /** `[m]` judgements: +1, -1, 0 unparseable. */
  judgements: ArrayLike<number>
}

/**
 * Builds the reward model's batch from judged steps: consistency rewards and their per-step z-scores
 * (`computeConsistencyRewards`) as the advantages of the verdict tokens.
 * @param penalty reward of an unparseable judgement; default `UNPARSEABLE_PENALTY` (-3).
 * @returns the batch and its metrics: `reward_model/unparseable_frac` (share of judgements that did
 *   not parse), `reward_model/consistency_mean` (mean reward before the z-score, penalties included),
 *   `reward_model/judgements`.
 * @throws ConfigError on no steps, an empty prompt, or rows of different m; ConfigError
 *   on a task reward outside [0, 1].
 */
export function buildRewardModelBatch(
  steps: readonly JudgedStep[],
  penalty: number = UNPARSEABLE_PENALTY,
): { batch: RewardModelBatch; metrics: MetricValues } {
  if (steps.length === 0) throw new ConfigError('steps', 0, 'need at least one judged step')
  const m = steps[0]!.tokens.length
  const n = steps.length * m
  const batch: RewardModelBatch = {
    steps: steps.length,
    m,
    prompts: [],
    tokens: new Int32Array(n),
    behaviorLogprobs: new Float32Array(n),
    advantages: new Float32Array(n),
    rewards: new Float32Array(n),
  }
  let unparseable = 0
  let rawSum = 0
  steps.forEach((s, j) => {
    if (m === 0 || s.tokens.length !== m || s.logprobs.length !== m || s.judgements.length !== m)
      throw new ConfigError(
        `steps[${j}]`,
        s.tokens.length,
        `needs m = ${m} > 0 tokens, logprobs and judgements`,
      )
    if (s.prompt.length === 0) throw new ConfigError(`steps[${j}].prompt`, 0, 'empty prompt')
    batch.prompts.push(s.prompt)
    const { raw, advantages } = computeConsistencyRewards({
      outcome: signedOutcome(s.outcome), // O = 2r - 1 in [-1, +1]
      judgements: s.judgements,
      penalty,
    })
    for (let l = 0; l < m; l++) {
      const k = j * m + l
      batch.tokens[k] = s.tokens[l]!
      batch.behaviorLogprobs[k] = s.logprobs[l]!
      batch.advantages[k] = advantages[l]! // A_l = z-score of (O + mean S) * S_l across the m judgements
      batch.rewards[k] = raw[l]!
      if (s.judgements[l] === 0) unparseable++
      rawSum += raw[l]!
    }
  })
  return {
    batch,
    metrics: {
      'reward_model/unparseable_frac': unparseable / n,
      'reward_model/consistency_mean': rawSum / n,
      'reward_model/judgements': n,
    },
  }
}

/**
 * One GRPO-TCR update of the reward model on a `RewardModelBatch` (`rewardModelStep`, with the
 * judge's verdict tokens), unless the `trainRewardModel` switch is off.
 * @param verdicts the ids of `+` and `-` in the judge's vocabulary (`RewardModel.verdicts`); default
 *   triad's own tokenizer's.
 * @returns `rewardModelStep`'s metrics (`reward_model/*`; `reward_model/updates` 0 when switched
 *   off or skipped) and `triad/switch/train_reward_model`.
 * @throws ConfigError on a temperature that is not > 0.
 */
export async function trainRewardModelStep(
  state: RewardModelTrainState,
  batch: RewardModelBatch,
  switches: TriadSwitches,
  config: RewardModelStepConfig = REWARD_MODEL_STEP_DEFAULTS,
  verdicts: VerdictTokens = TRIAD_VERDICT_TOKENS,
): Promise<MetricValues> {
  const out: MetricValues = {
    'triad/switch/train_reward_model': switches.trainRewardModel ? 1 : 0,
    'reward_model/updates': 0,
  }
  if (!switches.trainRewardModel) return out
  if (!(config.temperature > 0)) throw new ConfigError('temperature', config.temperature, 'must be > 0')
  const metrics = await rewardModelStep(state, batch, verdicts, config)
  return { ...out, ...metrics }
}
