import * as tf from '@tensorflow/tfjs'
import type { MetricValues } from '../protocols/index.ts'
import { broadcastToTokens, getAdvantageEstimator, normalizeTaskAdvantages } from './advantage.ts'
import { computeOverlongPenalty, type OverlongConfig } from './overlong.ts'
import { checkBatch, type RlBatch } from './rl-batch.ts'

/**
 * The advantage pipeline of an RL batch (docs/design.md#algorithms): outcome rewards, plus the
 * overlong penalty (DemyAgent), become group advantages (GRPO) broadcast to the trained tokens, or
 * the batch's own step advantages (RLAnything) are taken, then task advantage normalization
 * (AgentRL).
 */

/** The settings of the advantage pipeline (the fields of `RlStepConfig` it reads). */
export interface BatchAdvantageConfig {
  /** Group advantage estimator (`grpo` or `grpo-no-std`). */
  advantage: string
  /** Task advantage normalization over loss-masked tokens per task (AgentRL). */
  taskAdvantageNorm: boolean
  /** Overlong reward shaping on the trained-token count of each trajectory; off when absent. */
  overlong?: OverlongConfig
}

/** GRPO advantages with task normalization, no overlong shaping (as `RL_STEP_DEFAULTS`). */
export const BATCH_ADVANTAGE_DEFAULTS: Readonly<BatchAdvantageConfig> = Object.freeze({
  advantage: 'grpo',
  taskAdvantageNorm: true,
})

/**
 * Final token advantages of a batch: outcome rewards (+ overlong penalty) -> group advantages
 * broadcast to trained tokens (or the given step advantages) -> task normalization.
 * @returns `advantages` `[batch, seqLen]` float32 (caller disposes) and the per-trajectory
 *   overlong `penalty` (zeros without shaping).
 * @throws ShapeError / ConfigError on an inconsistent batch; UnknownVariantError on an unknown estimator.
 */
export function computeBatchAdvantages(
  batch: RlBatch,
  config: BatchAdvantageConfig = BATCH_ADVANTAGE_DEFAULTS,
): { advantages: tf.Tensor2D; penalty: Float32Array } {
  checkBatch(batch)
  const estimator = getAdvantageEstimator(config.advantage)
  return tf.tidy(() => {
    const mask = tf.tensor2d(batch.lossMask, [batch.batch, batch.seqLen])
    let rewards = tf.tensor1d(batch.rewards)
    let penalty = tf.zeros([batch.batch]) as tf.Tensor1D
    if (config.overlong) {
      penalty = computeOverlongPenalty(mask.sum(1) as tf.Tensor1D, config.overlong) // |y| = trained tokens
      rewards = rewards.add(penalty)
    }
    let adv = batch.stepAdvantages
      ? (tf.tensor2d(batch.stepAdvantages, [batch.batch, batch.seqLen]).mul(mask) as tf.Tensor2D)
      : broadcastToTokens(estimator({ rewards, groupIds: batch.groupIds }), mask)
    if (config.taskAdvantageNorm)
      adv = normalizeTaskAdvantages({ advantages: adv, mask, taskIds: batch.tasks })
    return { advantages: adv, penalty: penalty.dataSync() as Float32Array }
  })
}

/**
 * Mean and standard deviation of the final advantages over each task's trained tokens:
 * `adv/mean/<task>`, `adv/std/<task>`. `values` and `mask` are `[batch, seqLen]`.
 */
export function perTaskStats(values: Float32Array, mask: Float32Array, batch: RlBatch): MetricValues {
  const sums = new Map<string, { n: number; s: number; ss: number }>()
  for (let i = 0; i < batch.batch; i++) {
    const acc = sums.get(batch.tasks[i]!) ?? { n: 0, s: 0, ss: 0 }
    for (let t = 0; t < batch.seqLen; t++) {
      const k = i * batch.seqLen + t
      if (mask[k] === 0) continue
      acc.n++
      acc.s += values[k]!
      acc.ss += values[k]! ** 2
    }
    sums.set(batch.tasks[i]!, acc)
  }
  const out: MetricValues = {}
  for (const [task, { n, s, ss }] of sums) {
    const mean = n ? s / n : 0
    out[`adv/mean/${task}`] = mean
    out[`adv/std/${task}`] = n ? Math.sqrt(Math.max(0, ss / n - mean * mean)) : 0
  }
  return out
}
