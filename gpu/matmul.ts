import * as tf from '@tensorflow/tfjs'

/**
 * 2-D matrix product `a @ b` (`[m, k] x [k, n] -> [m, n]`) whose gradients are plain
 * (non-transposed) products of explicitly transposed operands: `dA = dY @ B^T`, `dB = A^T @ dY`.
 *
 * Why: on the wasm backend a matmul with a transpose flag, or with a batch dimension above one,
 * leaves XNNPACK's fast path and runs about ten times slower; tfjs's own matMul gradient uses
 * transpose flags. An explicit transpose costs one memory pass.
 */
export function matmul(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return matmulOp(a, b) as tf.Tensor2D
}

type GradFn = (
  a: tf.Tensor,
  b: tf.Tensor,
  save: tf.GradSaveFunc,
) => { value: tf.Tensor; gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[] }

const matmulGrad: GradFn = (a, b, save) => {
  save([a, b])
  return {
    value: tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D),
    gradFunc: (dy, saved) => [
      tf.matMul(dy as tf.Tensor2D, tf.transpose(saved[1]!) as tf.Tensor2D), // dA = dY B^T
      tf.matMul(tf.transpose(saved[0]!) as tf.Tensor2D, dy as tf.Tensor2D), // dB = A^T dY
    ],
  }
}

const matmulOp = tf.customGrad(matmulGrad as unknown as Parameters<typeof tf.customGrad>[0])

/** `a @ b^T` for 2-D operands, as `matmul(a, transpose(b))` (see `matmul` for why). */
export function matmulT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return matmul(a, tf.transpose(b))
}
