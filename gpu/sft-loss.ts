import * as tf from '@tensorflow/tfjs'
import type { SftBatch } from './sft-batch.ts'
import { type Transformer, tokenStatsAt } from './transformer.ts'

/**
 * Masked token-mean cross-entropy of a batch: `-sum(mask * log p(target)) / sum(mask)`.
 * @returns a scalar; differentiable with respect to the model's parameters.
 */
export function sftLoss(model: Transformer, batch: SftBatch): tf.Scalar {
  return tf.tidy(() => {
    const shape: [number, number] = [batch.batch, batch.seqLen]
    // The head and softmax on the trained positions alone (a large vocabulary makes them the bulk of a pass).
    const trained: number[] = []
    batch.mask.forEach((m, i) => {
      if (m !== 0) trained.push(i)
    })
    const { logp: lp } = tokenStatsAt(
      model,
      tf.tensor2d(batch.inputs, shape, 'int32'),
      tf.tensor2d(batch.targets, shape, 'int32'),
      Int32Array.from(trained),
    )
    const mask = tf.tensor2d(batch.mask, shape)
    return tf.div(tf.neg(tf.sum(tf.mul(lp, mask))), Math.max(1, batch.lossTokens)) as tf.Scalar // -sum(m log p)/sum(m)
  })
}
