import * as tf from '@tensorflow/tfjs'

type SoftmaxGrad = (
  scores: tf.Tensor,
  mask: tf.Tensor,
  save: tf.GradSaveFunc,
) => { value: tf.Tensor; gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[] }

/**
 * Attention weights `softmax(scores + mask)` over the last axis, as one differentiable op whose
 * backward pass keeps only its output `p` (composed from tfjs ops, the reshape and the sum would
 * each keep the `[.., t, keyLen]` scores as well: 29 MB a layer for 2 x 512 tokens and 14 heads).
 * Gradient (of the softmax, Bridle 1990): `dscores = p * (dp - sum(dp * p, -1))`; the mask gets none
 * (it is a constant of the forward pass; a zero gradient of its shape).
 * @param scores `[groups, rows, keyLen]` float32, rows ordered `(head, query)` within a group, as
 *   the batched product `q k^T` gives them. @param mask additive, `[batch, 1|heads, t|1, keyLen]`
 *   float32, broadcast against the scores viewed as `[batch, heads, t, keyLen]` (`heads` query heads
 *   over `groups / batch` key/value heads). @returns like `scores`.
 */
export function maskedSoftmax(
  scores: tf.Tensor3D,
  mask: tf.Tensor4D,
  batch: number,
  heads: number,
): tf.Tensor3D {
  const [groups, rows, keyLen] = scores.shape
  const t = (groups * rows) / (batch * heads)
  const op = tf.customGrad(((s: tf.Tensor, m: tf.Tensor, save: tf.GradSaveFunc) => {
    const p = tf.reshape(tf.softmax(tf.add(tf.reshape(s, [batch, heads, t, keyLen]), m)), [
      groups,
      rows,
      keyLen,
    ])
    save([p])
    return {
      value: p,
      gradFunc: (dp: tf.Tensor, saved: tf.Tensor[]) => {
        const [pS] = saved as [tf.Tensor]
        const ds = tf.mul(pS, tf.sub(dp, tf.sum(tf.mul(dp, pS), -1, true)))
        return [ds, tf.zerosLike(m)]
      },
    }
  }) as SoftmaxGrad as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact
  return op(scores, mask) as tf.Tensor3D
}
