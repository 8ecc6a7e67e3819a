import * as tf from '@tensorflow/tfjs'
import {
  addGradients,
  computeConsistencyRewards,
  computePolicyLossGrpoTcr,
  GRPO_TCR_DEFAULTS,
  type GrpoTcrConfig,
  hiddenStates,
  leftPad,
  leftPaddedTensors,
  lossAndGrads,
  outputWeight,
  type RlOptimizer,
  rowChunks,
  signedOutcome,
  type Transformer,
  UNPARSEABLE_PENALTY,
} from '../../gpu/index.ts'
import { RewardModelConfigError } from './errors.ts'
import { BAD_VERDICT_TOKEN, GOOD_VERDICT_TOKEN } from './judge-prompt.ts'
import type { TriadSwitches } from './triad-switches.ts'

/**
 * Training the reward model by consistency (RLAnything, arXiv 2602.02488; DESIGN.md): each sampled
 * verdict token is a one-token "response" to its judge prompt; its reward is the consistency reward
 * `(O + mean S) * S_l` with the signed outcome `O = 2r - 1` (a fixed penalty when unparseable), z-scored across the m judgements of the
 * step, and that z-score is the token's advantage. The policy's GRPO-TCR loss
 * (`computePolicyLossGrpoTcr`, `gpu/grpo.ts`) trains it on a `[steps, m]` matrix: row j holds the m
 * verdict tokens of step j, which all follow the same prompt, so one forward pass per prompt gives
 * `logp_theta` of all m (m times less work than m copies of the prompt).
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

/** The reward model's training batch; matrices are `[steps, m]` row-major. */
export interface RewardModelBatch {
  steps: number
  m: number
  /** Judge prompt of each step. */
  prompts: Int32Array[]
  /** `[steps, m]` int32 verdict tokens (the one-token responses). */
  tokens: Int32Array
  /** `[steps, m]` float32 behavior log-probabilities (recorded at sampling). */
  behaviorLogprobs: Float32Array
  /** `[steps, m]` float32 advantages: consistency rewards z-scored across each row. */
  advantages: Float32Array
  /** `[steps, m]` float32 consistency rewards before the z-score. */
  rewards: Float32Array
}

/**
 * Builds the reward model's batch from judged steps: consistency rewards and their per-step z-scores
 * (`computeConsistencyRewards`) as the advantages of the verdict tokens.
 * @param penalty reward of an unparseable judgement; default `UNPARSEABLE_PENALTY` (-3).
 * @returns the batch and its metrics: `reward_model/unparseable_frac` (share of judgements that did
 *   not parse), `reward_model/consistency_mean` (mean reward before the z-score, penalties included),
 *   `reward_model/judgements`.
 * @throws RewardModelConfigError on no steps, an empty prompt, or rows of different m; ConfigError
 *   on a task reward outside [0, 1].
 */
export function buildRewardModelBatch(
  steps: readonly JudgedStep[],
  penalty: number = UNPARSEABLE_PENALTY,
): { batch: RewardModelBatch; metrics: Record<string, number> } {
  if (steps.length === 0) throw new RewardModelConfigError('steps', 0, 'need at least one judged step')
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
      throw new RewardModelConfigError(
        `steps[${j}]`,
        s.tokens.length,
        `needs m = ${m} > 0 tokens, logprobs and judgements`,
      )
    if (s.prompt.length === 0) throw new RewardModelConfigError(`steps[${j}].prompt`, 0, 'empty prompt')
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

/** Settings of a reward-model update. */
export interface RewardModelStepConfig {
  /** GRPO-TCR loss settings; DemyAgent's defaults. */
  loss: GrpoTcrConfig
  /** Temperature the verdicts were sampled at (logits are divided by it); default 1. */
  temperature: number
  /**
   * Weight of the verdict-entropy bonus (default 0): the loss subtracts `coef * mean_j H_j`, with
   * `H_j` the entropy of the step's two verdicts renormalised (`q = p(+) / (p(+) + p(-))`). The
   * consistency advantages are 0 when all m judgements of a step agree, so a judge that collapses
   * onto one verdict (easy from random weights, where the first verdict to appear wins) stops
   * learning; this bonus keeps both verdicts sampled without rewarding unparseable tokens, as a
   * full-vocabulary entropy bonus would.
   */
  verdictEntropyCoef: number
  /**
   * Most padded prompt tokens per forward/backward pass (default 4096): the steps are split into
   * row chunks whose gradients add up to the whole batch's (each chunk's loss weighted by its share
   * of the steps), which bounds memory (attention holds `rows * heads * width^2` floats per layer).
   */
  microBatchTokens?: number
}

/** DemyAgent's GRPO-TCR defaults, temperature 1, no verdict-entropy bonus. */
export const REWARD_MODEL_STEP_DEFAULTS: Readonly<RewardModelStepConfig> = Object.freeze({
  loss: GRPO_TCR_DEFAULTS,
  temperature: 1,
  verdictEntropyCoef: 0,
})

/**
 * `log softmax(logits / T)` of the next token after each prompt, `[prompts, vocabSize]` (left-padded
 * batch, padding masked, positions from each prompt's first token). Differentiable.
 */
function lastLogSoftmax(
  model: Transformer,
  prompts: readonly Int32Array[],
  temperature: number,
): tf.Tensor2D {
  const t = leftPaddedTensors(leftPad(prompts))
  const h = hiddenStates(model, t.ids, {
    positions: t.positions,
    attentionMask: t.attentionMask,
    lastOnly: true,
  })
  let logits = tf.matMul(h, outputWeight(model), false, true) // h W^T (W = E when tied)
  if (temperature !== 1) logits = logits.div(temperature)
  return tf.logSoftmax(logits) as tf.Tensor2D
}

/** What a reward-model update updates. */
export interface RewardModelTrainState {
  model: Transformer
  /** The reward model's own `AdamW` (which clips the global gradient norm, 1.0 by default). */
  optimizer: RlOptimizer
  /** Learning rate of this step. */
  lr: number
}

/**
 * One GRPO-TCR update of the reward model on a `RewardModelBatch`, unless the `trainRewardModel`
 * switch is off. `logp_theta` of each verdict token comes from one forward pass over the step's
 * prompt; the loss is `computePolicyLossGrpoTcr` over the `[steps, m]` matrix (all entries
 * trained), and the optimizer steps (AdamW clips the global gradient norm). A non-finite gradient
 * norm skips the update.
 * @returns metrics: the loss's `policy/*` keys prefixed `reward_model/`, `reward_model/grad_norm`,
 *   `reward_model/updates` (1 when it trained, 0 when switched off or skipped) and
 *   `triad/switch/train_reward_model`.
 * @throws RewardModelConfigError on a bad config.
 */
export async function trainRewardModelStep(
  state: RewardModelTrainState,
  batch: RewardModelBatch,
  switches: TriadSwitches,
  config: RewardModelStepConfig = REWARD_MODEL_STEP_DEFAULTS,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {
    'triad/switch/train_reward_model': switches.trainRewardModel ? 1 : 0,
    'reward_model/updates': 0,
  }
  if (!switches.trainRewardModel) return out
  if (!(config.temperature > 0))
    throw new RewardModelConfigError('temperature', config.temperature, 'must be > 0')
  const { steps, m } = batch
  const vocab = state.model.config.vocabSize
  const verdictColumns = tf.tidy(() =>
    tf.oneHot(tf.tensor1d([GOOD_VERDICT_TOKEN, BAD_VERDICT_TOKEN], 'int32'), vocab).transpose(),
  ) // [V, 2]
  const width = Math.max(...batch.prompts.map((p) => p.length))
  const kept: Record<string, number> = {}
  const grads: Record<string, tf.Tensor> = {}
  let value = 0
  try {
    // Gradient accumulation over row chunks: every row has m trained entries, so each chunk's
    // loss (a mean over its rows) weighted by rows/steps sums to the whole batch's loss.
    for (const [r0, r1] of rowChunks(steps, width, config.microBatchTokens ?? 4096)) {
      const rows = r1 - r0
      const weight = rows / steps
      const shape: [number, number] = [rows, m]
      const part = (a: Float32Array) => a.subarray(r0 * m, r1 * m)
      const behavior = tf.tensor2d(part(batch.behaviorLogprobs), shape)
      const advantages = tf.tensor2d(part(batch.advantages), shape)
      const mask = tf.ones(shape) as tf.Tensor2D
      const picks = tf.tidy(() =>
        tf
          .oneHot(tf.tensor1d(batch.tokens.subarray(r0 * m, r1 * m), 'int32'), vocab)
          .reshape([rows, m, vocab]),
      ) // [rows, m, V]
      const partKept: Record<string, tf.Scalar> = {}
      try {
        const result = await lossAndGrads(state.model, () => {
          const logSm = lastLogSoftmax(state.model, batch.prompts.slice(r0, r1), config.temperature) // [rows, V]
          const logProbs = picks.mul(logSm.reshape([rows, 1, vocab])).sum(-1) as tf.Tensor2D // log p(verdict_jl | prompt_j)
          const { loss, metrics } = computePolicyLossGrpoTcr(
            { logProbs, behaviorLogProbs: behavior, advantages, mask },
            config.loss,
          )
          for (const [k, t] of Object.entries(metrics)) partKept[k] = tf.keep(t)
          const pair = logSm.matMul(verdictColumns) // [rows, 2] log p(+), log p(-) (one-hot matmul: wasm has no gather gradient)
          const logQ = pair.sub(pair.logSumExp(1, true)) // log of the renormalised pair
          const entropy = logQ.exp().mul(logQ).sum(1).neg().mean() // mean_j H_j
          partKept['verdict_entropy'] = tf.keep(entropy as tf.Scalar)
          const total = config.verdictEntropyCoef ? loss.sub(entropy.mul(config.verdictEntropyCoef)) : loss // L - coef * H
          return total.mul(weight) as tf.Scalar
        })
        value += result.loss
        addGradients(grads, result.grads)
        for (const [k, t] of Object.entries(partKept)) kept[k] = (kept[k] ?? 0) + t.dataSync()[0]! * weight
      } finally {
        tf.dispose([behavior, advantages, mask, picks, ...Object.values(partKept)])
      }
    }
    const gradNorm = tf.tidy(
      () =>
        tf
          .addN(Object.values(grads).map((g) => g.square().sum()))
          .sqrt()
          .dataSync()[0]!,
    ) // ||g||_2
    if (Number.isFinite(gradNorm)) {
      await state.optimizer.step(grads, state.lr)
      out['reward_model/updates'] = 1
    }
    for (const [k, v] of Object.entries(kept)) out[`reward_model/${k}`] = v
    out['reward_model/grad_norm'] = gradNorm
    out['reward_model/loss'] = value
    return out
  } finally {
    tf.dispose([verdictColumns, ...Object.values(grads)])
  }
}
