import * as tf from '@tensorflow/tfjs'
import { FusedKernel } from './fused-kernel-names.ts'

/**
 * The transformer's fused operations, each with its gradient: one kernel on a backend that has it
 * (the native engine), the same math composed from tfjs ops elsewhere (wasm, cpu, tfjs-node), so
 * there is one model implementation on every backend.
 */

/** Whether the active backend has a kernel of this name. */
function hasKernel(name: string): boolean {
  return tf.getKernel(name, tf.getBackend()) !== undefined
}

const zeros = (t: tf.Tensor) => () => tf.zerosLike(t)

tf.registerGradient({
  kernelName: FusedKernel.RmsNorm,
  inputsToSave: ['x', 'g'],
  gradFunc: (dy, saved, attrs) => {
    const [x, g] = saved as [tf.Tensor, tf.Tensor]
    const [dx, dg] = tf
      .engine()
      .runKernel(FusedKernel.RmsNormGrad, { dy: dy as tf.Tensor, x, g }, attrs) as tf.Tensor[]
    return { x: () => dx!, g: () => dg! }
  },
})

tf.registerGradient({
  kernelName: FusedKernel.Swiglu,
  inputsToSave: ['gate', 'up'],
  gradFunc: (dh, saved) => {
    const [gate, up] = saved as [tf.Tensor, tf.Tensor]
    const [dgate, dup] = tf
      .engine()
      .runKernel(FusedKernel.SwigluGrad, { dh: dh as tf.Tensor, gate, up }) as tf.Tensor[]
    return { gate: () => dgate!, up: () => dup! }
  },
})

tf.registerGradient({
  kernelName: FusedKernel.Rope,
  inputsToSave: ['cos', 'sin'],
  gradFunc: (dy, saved) => {
    const [cos, sin] = saved as [tf.Tensor, tf.Tensor]
    const dx = tf
      .engine()
      .runKernel(FusedKernel.Rope, { x: dy as tf.Tensor, cos, sin }, { backward: true }) as tf.Tensor
    return { x: () => dx, cos: zeros(cos), sin: zeros(sin) }
  },
})

tf.registerGradient({
  kernelName: FusedKernel.TokenLogprob,
  inputsToSave: ['logits', 'targets'],
  gradFunc: (dy, saved) => {
    const [logits, targets] = saved as [tf.Tensor, tf.Tensor]
    const dz = tf
      .engine()
      // the saved logits serve this gradient alone: a backend may write the gradient over them
      .runKernel(
        FusedKernel.TokenLogprobGrad,
        { dy: dy as tf.Tensor, logits, targets },
        {
          reuseLogits: true,
        },
      ) as tf.Tensor
    return { logits: () => dz, targets: zeros(targets) }
  },
})

/**
 * RMSNorm over the last axis, `x / sqrt(mean(x^2) + eps) * g` (Zhang & Sennrich 2019, eq. 4).
 * @param x `[..., d]` float32. @param g `[d]` float32. @returns like x.
 */
export function rmsNorm<T extends tf.Tensor>(x: T, g: tf.Tensor, eps: number): T {
  if (hasKernel(FusedKernel.RmsNorm))
    return tf.engine().runKernel(FusedKernel.RmsNorm, { x, g }, { eps }) as T
  const ms = tf.mean(tf.square(x), -1, true) // mean(x^2)
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), g) as T // x / RMS(x) * g
}

/**
 * The gated MLP's activation `silu(gate) * up = gate sigmoid(gate) up` (Shazeer 2020, eq. 6).
 * @param gate float32, any shape. @param up the same shape. @returns the same shape.
 */
export function swiglu<T extends tf.Tensor>(gate: T, up: T): T {
  if (hasKernel(FusedKernel.Swiglu)) return tf.engine().runKernel(FusedKernel.Swiglu, { gate, up }) as T
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as T // silu(g) * u
}

/**
 * Rotary positions, rotate-half form: `x cos + rotate_half(x) sin` (RoFormer eq. 34), where
 * `rotate_half(x) = [x2, x1]` and the sin table holds `-sin` on the first half.
 * @param x `[n, heads, headDim]` float32. @param cos `[n, 1, headDim]` float32 (row i: token i's
 *   position). @param sin like cos. @param rotateHalf `[headDim, headDim]`, the permutation
 *   `x @ rotateHalf = [x2, x1]` (used where the kernel is missing). @returns `[n, heads, headDim]`.
 */
export function rope(
  x: tf.Tensor3D,
  cos: tf.Tensor3D,
  sin: tf.Tensor3D,
  rotateHalf: tf.Tensor2D,
): tf.Tensor3D {
  if (hasKernel(FusedKernel.Rope))
    return tf.engine().runKernel(FusedKernel.Rope, { x, cos, sin }) as tf.Tensor3D
  const [n, h, hd] = x.shape
  const rotated = tf.reshape(tf.matMul(tf.reshape(x, [n * h, hd]), rotateHalf), [n, h, hd])
  return tf.add(tf.mul(x, cos), tf.mul(rotated, sin)) as tf.Tensor3D // x*cos + rotate_half(x)*sin
}

/**
 * Log-probability of the chosen token of each row, `log softmax(z)[y] = z_y - logsumexp(z)`,
 * differentiable in the logits.
 * @param logits `[rows, vocab]` float32. @param targets `[rows]` int32 in `[0, vocab)`.
 * @returns `[rows]` float32 (nats).
 */
export function tokenLogprob(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  if (hasKernel(FusedKernel.TokenLogprob))
    return tf.engine().runKernel(FusedKernel.TokenLogprob, { logits, targets }) as tf.Tensor1D
  const [rows, vocab] = logits.shape
  const lse = tf.logSumExp(logits, -1) // [rows]
  // z_y by a gather at row * V + y (no [rows, V] one-hot; its gradient is a scatter-add)
  const flat = tf.add(
    tf.mul(tf.range(0, rows, 1, 'int32'), tf.scalar(vocab, 'int32')),
    targets,
  ) as tf.Tensor1D
  return tf.sub(tf.gather(tf.reshape(logits, [rows * vocab]), flat), lse) as tf.Tensor1D // log p = z_y - logsumexp(z)
}

/**
 * Entropy of each row's softmax, `H = -sum_j p_j log p_j` with `p = softmax(z)` (nats).
 * `differentiable: false` asks for the value alone (the entropy metric of a step whose loss leaves
 * it out): the backend's `TriadTokenEntropy` where it has one, one pass with no tensor saved for a
 * gradient, and no gradient (a loss that depends on it fails in the backward pass). Otherwise, and
 * on a backend without the kernel, the composed form, differentiable in the logits.
 * @param logits `[rows, vocab]` float32. @returns `[rows]` float32 (NaN for a row whose max is not
 *   finite on the kernel).
 */
export function tokenEntropy(logits: tf.Tensor2D, options: { differentiable: boolean }): tf.Tensor1D {
  if (!options.differentiable && hasKernel(FusedKernel.TokenEntropy))
    return tf.engine().runKernel(FusedKernel.TokenEntropy, { logits }) as tf.Tensor1D
  const [rows] = logits.shape
  const logSm = tf.sub(logits, tf.reshape(tf.logSumExp(logits, -1), [rows, 1])) // log p
  return tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), -1)) as tf.Tensor1D // H = -sum p log p
}

/**
 * Scaled dot-product attention `softmax(q k^T + mask) v` as one kernel, for a pass no tape records
 * (generation, log-probabilities without a gradient): the backend's `TriadAttention` where it has
 * one. The same values as the composed form up to rounding (the blocked keys, mask -1e9, weigh
 * exactly 0 in both).
 * @param q `[groups, rows, hd]` float32, the 1/sqrt(hd) folded in, rows ordered (query head, time)
 *   within a group. @param k `[groups, keys, hd]`. @param v like k. @param mask additive
 *   `[batch or 1, 1, steps, keys]`. @param kvHeads key/value heads per sequence (groups / batch).
 * @returns `[groups, rows, hd]`, or undefined where there is no such kernel or a tape is recording
 *   (the caller composes the attention then, which has a gradient).
 */
export function fusedAttention(
  q: tf.Tensor3D,
  k: tf.Tensor3D,
  v: tf.Tensor3D,
  mask: tf.Tensor4D,
  kvHeads: number,
): tf.Tensor3D | undefined {
  if (mask.shape[1] !== 1 || tf.engine().isTapeOn() || !hasKernel(FusedKernel.Attention)) return undefined
  return tf.engine().runKernel(FusedKernel.Attention, { q, k, v, mask }, { kvHeads }) as tf.Tensor3D
}
