import * as tf from '@tensorflow/tfjs'
import { transposeFlagsAreFast } from './matmul.ts'

/**
 * `a^T`-or-`a` times `b^T`-or-`b` for 2-D operands: the transpose flags where the backend takes
 * them at full speed, else explicit transposes (see `matmul.ts`).
 */
function product(a: tf.Tensor2D, b: tf.Tensor2D, transposeA: boolean, transposeB: boolean): tf.Tensor2D {
  if (transposeFlagsAreFast()) return tf.matMul(a, b, transposeA, transposeB)
  return tf.matMul(transposeA ? tf.transpose(a) : a, transposeB ? tf.transpose(b) : b)
}

type LoraGrad = (
  y: tf.Tensor,
  x: tf.Tensor,
  a: tf.Tensor,
  b: tf.Tensor,
  save: tf.GradSaveFunc,
) => { value: tf.Tensor; gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[] }

/**
 * `y + scale (x A) B`, the LoRA update of a projection's output `y = x W` (Hu et al. 2021, eq. 3;
 * `scale = alpha / r`), as one differentiable op whose backward pass keeps only `x` and the
 * `[n, r]` product `x A` (composed from tfjs ops, the sum and the scaling would each save an
 * `[n, out]` operand: 80 MB a projection for 1024 tokens of a 4864-wide MLP). Gradients:
 * `dy = dY`, `dB = s (x A)^T dY`, `d(xA) = s dY B^T`, `dA = x^T d(xA)`, `dx = d(xA) A^T`.
 * @param y `[n, out]` float32. @param x `[n, in]` float32 (after any dropout).
 * @param a `[in, r]` float32. @param b `[r, out]` float32. @param scale alpha / r.
 * @returns `[n, out]` float32.
 */
export function loraUpdate(
  y: tf.Tensor2D,
  x: tf.Tensor2D,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scale: number,
): tf.Tensor2D {
  const op = tf.customGrad(((
    y: tf.Tensor,
    x: tf.Tensor,
    a: tf.Tensor,
    b: tf.Tensor,
    save: tf.GradSaveFunc,
  ) => {
    const xa = tf.matMul(x as tf.Tensor2D, a as tf.Tensor2D) // [n, r]
    save([x, xa, a, b])
    return {
      value: tf.add(y, tf.mul(tf.matMul(xa, b as tf.Tensor2D), scale)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, xaS, aS, bS] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D, tf.Tensor2D]
        const dys = tf.mul(dy, scale) as tf.Tensor2D // s dY, [n, out]
        const dxa = product(dys, bS, false, true) // s dY B^T, [n, r]
        return [
          dy.clone(), // dy
          product(dxa, aS, false, true), // dx = d(xA) A^T, [n, in]
          product(xs, dxa, true, false), // dA = x^T d(xA), [in, r]
          product(xaS, dys, true, false), // dB = (x A)^T s dY, [r, out]
        ]
      },
    }
  }) as LoraGrad as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact
  return op(y, x, a, b) as tf.Tensor2D
}
