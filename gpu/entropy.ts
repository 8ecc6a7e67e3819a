import * as tf from '@tensorflow/tfjs'
import { ShapeError } from './errors.ts'

/**
 * Entropy of the categorical distribution at each position:
 * `H = logsumexp(z) - sum_v softmax(z)_v * z_v` (equal to `-sum_v p_v log p_v`, computed stably).
 * @param logits `[batch, seqLen, vocab]` float32 (already divided by any sampling temperature).
 * @returns `[batch, seqLen]` float32 entropies in nats.
 * @throws ShapeError when `logits` is not 3-D.
 */
export function computeEntropyFromLogits(logits: tf.Tensor3D): tf.Tensor2D {
  if (logits.rank !== 3) throw new ShapeError('logits', '[batch, seqLen, vocab]', logits.shape)
  return tf.tidy(() => {
    const logZ = logits.logSumExp(-1) // logsumexp(z)
    const p = logits.softmax()
    return logZ.sub(p.mul(logits).sum(-1)) as tf.Tensor2D // H = logsumexp(z) - sum p z
  })
}
