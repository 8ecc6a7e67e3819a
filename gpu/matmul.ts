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

/**
 * Whether the active backend multiplies with transpose flags as fast as without (the native engine's
 * GEMM packs either layout; so does libtensorflow's): then no explicit transpose is made.
 */
export function transposeFlagsAreFast(): boolean {
  const backend = tf.getBackend()
  return backend !== 'wasm' && backend !== 'cpu'
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
    gradFunc: (dy, saved) =>
      transposeFlagsAreFast()
        ? [
            tf.matMul(dy as tf.Tensor2D, saved[1] as tf.Tensor2D, false, true), // dA = dY B^T
            tf.matMul(saved[0] as tf.Tensor2D, dy as tf.Tensor2D, true, false), // dB = A^T dY
          ]
        : [
            tf.matMul(dy as tf.Tensor2D, tf.transpose(saved[1]!) as tf.Tensor2D), // dA = dY B^T
            tf.matMul(tf.transpose(saved[0]!) as tf.Tensor2D, dy as tf.Tensor2D), // dB = A^T dY
          ],
  }
}

const matmulOp = tf.customGrad(matmulGrad as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact

/** `a @ b^T` for 2-D operands, as `matmul(a, transpose(b))` (see `matmul` for why). */
export function matmulT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (transposeFlagsAreFast()) return matmulTOp(a, b) as tf.Tensor2D
  return matmul(a, tf.transpose(b))
}

const matmulTGrad: GradFn = (a, b, save) => {
  save([a, b])
  return {
    value: tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D, false, true),
    gradFunc: (dy, saved) => [
      tf.matMul(dy as tf.Tensor2D, saved[1] as tf.Tensor2D), // dA = dY B
      tf.matMul(dy as tf.Tensor2D, saved[0] as tf.Tensor2D, true, false), // dB = dY^T A
    ],
  }
}

const matmulTOp = tf.customGrad(matmulTGrad as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact

/**
 * `a @ b` (`[m, k] x [k, n] -> [m, n]`) with a gradient for `a` alone, `dA = dY @ B^T`: for a frozen
 * weight `b` (the base of a LoRA model), whose gradient `A^T @ dY` would cost as much work as `dA`
 * and a buffer of `b`'s size, only to be thrown away.
 */
export function matmulFrozen(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const op = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
    save([])
    return {
      value: tf.matMul(x as tf.Tensor2D, b),
      gradFunc: (dy: tf.Tensor) =>
        transposeFlagsAreFast()
          ? tf.matMul(dy as tf.Tensor2D, b, false, true) // dA = dY B^T
          : tf.matMul(dy as tf.Tensor2D, tf.transpose(b) as tf.Tensor2D),
    }
  }) as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact
  return op(a) as tf.Tensor2D
}

/**
 * `h @ w^T` (`[m, k] x [n, k]^T -> [m, n]`) with a gradient for `h` alone, `dH = dY @ w` (a plain
 * product, no transpose): the output projection of a model whose head (or tied embedding) is
 * frozen. The value takes the transpose flag for at most `flagRows` rows (decoding: the explicit
 * transpose of a large head costs more than the product), else an explicit transpose.
 */
export function matmulTFrozen(h: tf.Tensor2D, w: tf.Tensor2D, flagRows: number): tf.Tensor2D {
  const op = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
    save([])
    const value =
      x.shape[0]! <= flagRows || transposeFlagsAreFast()
        ? tf.matMul(x as tf.Tensor2D, w, false, true)
        : tf.matMul(x as tf.Tensor2D, tf.transpose(w) as tf.Tensor2D)
    return { value, gradFunc: (dy: tf.Tensor) => tf.matMul(dy as tf.Tensor2D, w) } // dH = dY w
  }) as unknown as Parameters<typeof tf.customGrad>[0]) // cast: tf.customGrad's type admits only Tensor arguments; the gradient function's own signature is exact
  return op(h) as tf.Tensor2D
}
