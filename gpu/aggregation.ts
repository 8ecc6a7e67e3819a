import * as tf from '@tensorflow/tfjs'
import { defineRegistry, lookupVariant } from './registry.ts'
import { assertMatrix, assertShape } from './shape.ts'

/**
 * Reduces a per-token loss to a scalar.
 * @param lossMatrix `[batch, seqLen]` float32 per-token loss.
 * @param mask `[batch, seqLen]` float32, 1 for a token the loss counts, else 0.
 * @returns a float32 scalar. An empty mask gives 0 (never NaN).
 */
export type Aggregator = (lossMatrix: tf.Tensor2D, mask: tf.Tensor2D) => tf.Scalar

function check(lossMatrix: tf.Tensor2D, mask: tf.Tensor2D): void {
  assertShape('mask', mask, assertMatrix('lossMatrix', lossMatrix))
}

/**
 * Token-mean (DAPO arXiv 2503.14476 eq. 12; DemyAgent GRPO-TCR's default):
 * `sum_{i,t} m_it L_it / sum_{i,t} m_it`; every trained token of the batch weighs the same.
 * @throws ShapeError when the shapes differ.
 */
export function aggregateTokenMean(lossMatrix: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  check(lossMatrix, mask)
  return tf.tidy(() => {
    const m = mask.toFloat()
    return lossMatrix.mul(m).sum().div(m.sum().maximum(1)) as tf.Scalar // sum m L / sum m
  })
}

/**
 * Sequence-mean of token-means (GRPO, DeepSeekMath arXiv 2402.03300 eq. 3):
 * `mean_i (sum_t m_it L_it / sum_t m_it)` over the sequences with at least one trained token.
 * @throws ShapeError when the shapes differ.
 */
export function aggregateSeqMeanTokenMean(lossMatrix: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  check(lossMatrix, mask)
  return tf.tidy(() => {
    const m = mask.toFloat()
    const tokens = m.sum(1)
    const present = tokens.greater(0).toFloat()
    const perSeq = lossMatrix.mul(m).sum(1).div(tokens.maximum(1)) // sum_t m L / sum_t m
    return perSeq.mul(present).sum().div(present.sum().maximum(1)) as tf.Scalar // mean_i
  })
}

/**
 * Sequence-mean of token-sums (Dr. GRPO arXiv 2503.20783; verl `seq-mean-token-sum`):
 * `mean_i sum_t m_it L_it` over the sequences with at least one trained token.
 * @throws ShapeError when the shapes differ.
 */
export function aggregateSeqMeanTokenSum(lossMatrix: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  check(lossMatrix, mask)
  return tf.tidy(() => {
    const m = mask.toFloat()
    const present = m.sum(1).greater(0).toFloat()
    const perSeq = lossMatrix.mul(m).sum(1) // sum_t m L
    return perSeq.mul(present).sum().div(present.sum().maximum(1)) as tf.Scalar // mean_i
  })
}

/** Registered aggregation modes, by name. */
export const Aggregators = defineRegistry<Aggregator>({
  'token-mean': aggregateTokenMean,
  'seq-mean-token-mean': aggregateSeqMeanTokenMean,
  'seq-mean-token-sum': aggregateSeqMeanTokenSum,
})
/** Names of the registered aggregation modes. */
export const AggregationMode = {
  TokenMean: 'token-mean',
  SeqMeanTokenMean: 'seq-mean-token-mean',
  SeqMeanTokenSum: 'seq-mean-token-sum',
} as const
export type AggregationMode = (typeof AggregationMode)[keyof typeof AggregationMode]

/**
 * Looks an aggregation mode up by name.
 * @throws UnknownVariantError listing the valid names.
 */
export function getAggregator(name: string): Aggregator {
  return lookupVariant('aggregation mode', Aggregators, name)
}
