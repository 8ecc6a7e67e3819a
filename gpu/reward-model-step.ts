import * as tf from '@tensorflow/tfjs'
import type { MetricValues } from '../protocols/index.ts'
import { ConfigError } from './errors.ts'
import { computePolicyLossGrpoTcr, GRPO_TCR_DEFAULTS, type GrpoTcrConfig, PolicyMetric } from './grpo.ts'
import { leftPad, leftPaddedTensors, rowChunks } from './left-pad.ts'
import { GradientAccumulator, type RlOptimizer } from './micro-batch.ts'
import { hiddenStates, outputWeight, type Transformer } from './transformer.ts'

/**
 * The reward model's consistency update (RLAnything, arXiv 2602.02488; docs/design.md#algorithms,
 * dynamic triad): each sampled verdict token is a one-token "response" to its judge prompt, its
 * advantage the consistency reward `(O + mean S) * S_l` z-scored across the m judgements of the
 * step. The policy's GRPO-TCR loss (`computePolicyLossGrpoTcr`) trains it on a `[steps, m]` matrix:
 * row j holds the m verdict tokens of step j, which all follow the same prompt, so one forward pass
 * per prompt gives `logp_theta` of all m (m times less work than m copies of the prompt). The
 * micro-batch accumulation and the optimizer step are the RL step's (`GradientAccumulator`).
 */

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

/** What a reward-model update updates. */
export interface RewardModelTrainState {
  model: Transformer
  /** The reward model's own `AdamW` (which clips the global gradient norm, 1.0 by default). */
  optimizer: RlOptimizer
  /** Learning rate of this step. */
  lr: number
}

/** The token ids of the two verdicts: `good` is `S = +1`, `bad` is `S = -1`. */
export interface VerdictTokens {
  good: number
  bad: number
}

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

/**
 * One GRPO-TCR update of the reward model on a `RewardModelBatch`: `logp_theta` of each verdict
 * token comes from one forward pass over the step's prompt; the loss is `computePolicyLossGrpoTcr`
 * over the `[steps, m]` matrix (all entries trained) minus `verdictEntropyCoef * mean_j H_j`, and
 * the optimizer steps (AdamW clips the global gradient norm). A non-finite gradient norm skips the
 * update.
 * @returns metrics: the loss's `policy/*` keys and `verdict_entropy` prefixed `reward_model/`,
 *   `reward_model/grad_norm`, `reward_model/loss`, and `reward_model/updates` (1 when it stepped).
 * @throws ConfigError on a temperature that is not > 0.
 */
export async function rewardModelStep(
  state: RewardModelTrainState,
  batch: RewardModelBatch,
  verdicts: VerdictTokens,
  config: RewardModelStepConfig = REWARD_MODEL_STEP_DEFAULTS,
): Promise<MetricValues> {
  if (!(config.temperature > 0)) throw new ConfigError('temperature', config.temperature, 'must be > 0')
  const { steps, m } = batch
  const vocab = state.model.config.vocabSize
  const verdictColumns = tf.tidy(() =>
    tf.oneHot(tf.tensor1d([verdicts.good, verdicts.bad], 'int32'), vocab).transpose(),
  ) // [V, 2]
  const width = Math.max(...batch.prompts.map((p) => p.length))
  const accumulator = new GradientAccumulator<PolicyMetric | 'verdict_entropy'>(state.model)
  try {
    // Every row has m trained entries, so each chunk's loss (a mean over its rows) weighted by
    // rows/steps sums to the whole batch's loss.
    for (const [r0, r1] of rowChunks(steps, width, config.microBatchTokens ?? 4096)) {
      const rows = r1 - r0
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
      try {
        await accumulator.add(rows / steps, (keep) => {
          const logSm = lastLogSoftmax(state.model, batch.prompts.slice(r0, r1), config.temperature) // [rows, V]
          const logProbs = picks.mul(logSm.reshape([rows, 1, vocab])).sum(-1) as tf.Tensor2D // log p(verdict_jl | prompt_j)
          const { loss, metrics } = computePolicyLossGrpoTcr(
            { logProbs, behaviorLogProbs: behavior, advantages, mask },
            config.loss,
          )
          for (const k of Object.values(PolicyMetric)) keep(k, metrics[k])
          const pair = logSm.matMul(verdictColumns) // [rows, 2] log p(+), log p(-) (one-hot matmul: wasm has no gather gradient)
          const logQ = pair.sub(pair.logSumExp(1, true)) // log of the renormalised pair
          const entropy = logQ.exp().mul(logQ).sum(1).neg().mean() as tf.Scalar // mean_j H_j
          keep('verdict_entropy', entropy)
          return config.verdictEntropyCoef ? loss.sub(entropy.mul(config.verdictEntropyCoef)) : loss // L - coef * H
        })
      } finally {
        tf.dispose([behavior, advantages, mask, picks])
      }
    }
    const { gradNorm, skipped } = await accumulator.apply(state.optimizer, state.lr)
    const out: MetricValues = { 'reward_model/updates': skipped ? 0 : 1 }
    for (const [k, v] of accumulator.metrics()) out[`reward_model/${k}` as const] = v
    out['reward_model/grad_norm'] = gradNorm
    out['reward_model/loss'] = accumulator.loss
    return out
  } finally {
    accumulator.dispose()
    verdictColumns.dispose()
  }
}
