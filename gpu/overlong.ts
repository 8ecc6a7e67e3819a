import * as tf from '@tensorflow/tfjs'
import { ConfigError, ShapeError } from './errors.ts'

/** Settings of overlong reward shaping. */
export interface OverlongConfig {
  /** `L_max`: the longest response, in tokens; beyond it the penalty is -1. */
  L_max: number
  /** `L_buf`: the soft buffer before `L_max`, in tokens, where the penalty grows linearly. */
  L_buf: number
}

function checkConfig(config: OverlongConfig): void {
  const { L_max, L_buf } = config
  if (!(L_max > 0)) throw new ConfigError('L_max', L_max, 'must be > 0')
  if (!(L_buf > 0 && L_buf <= L_max)) {
    throw new ConfigError('L_buf', L_buf, `must be in (0, L_max = ${L_max}]`)
  }
}

/**
 * The overlong penalty of one response, as a plain number (the formula of
 * `computeOverlongPenalty`, for code that shapes outcomes outside tensors: the step-reward path
 * adds it to the outcome O that `R_j = O + lambda * mean_l S_jl` is built from).
 * @param length `|y|`, the response length in tokens (>= 0).
 * @returns the penalty in [-1, 0].
 * @throws ConfigError when `L_buf` is not in (0, L_max] or `length` is negative or not finite.
 */
export function overlongPenalty(length: number, config: OverlongConfig): number {
  checkConfig(config)
  if (!(length >= 0 && Number.isFinite(length)))
    throw new ConfigError('length', length, 'must be a finite number >= 0')
  const { L_max, L_buf } = config
  if (length > L_max) return -1 // -1 beyond L_max
  if (length <= L_max - L_buf) return 0 // 0 when |y| <= L_max - L_buf
  return (L_max - L_buf - length) / L_buf // ((L_max - L_buf) - |y|) / L_buf
}

/**
 * Overlong reward shaping (DAPO, arXiv 2503.14476, eq. 13; used by DemyAgent GRPO-TCR):
 * `0` when `|y| <= L_max - L_buf`; `((L_max - L_buf) - |y|) / L_buf` inside the buffer;
 * `-1` beyond `L_max`. The result is added to the outcome reward.
 * @param lengths `[batch]` response lengths `|y|` in tokens (int32 or float32).
 * @returns `[batch]` float32 penalties in [-1, 0].
 * @throws ConfigError when `L_buf` is not in (0, L_max];
 *   ShapeError when `lengths` is not 1-D.
 */
export function computeOverlongPenalty(lengths: tf.Tensor1D, config: OverlongConfig): tf.Tensor1D {
  const { L_max, L_buf } = config
  checkConfig(config)
  if (lengths.rank !== 1) throw new ShapeError('lengths', '[batch]', lengths.shape)
  return tf.tidy(() => {
    const y = lengths.toFloat()
    const soft = tf
      .scalar(L_max - L_buf)
      .sub(y)
      .div(L_buf) // ((L_max - L_buf) - |y|) / L_buf
    const inside = tf.where(y.lessEqual(L_max - L_buf), tf.zerosLike(y), soft) // 0 when |y| <= L_max - L_buf
    return tf.where(y.greater(L_max), tf.fill(y.shape, -1), inside) as tf.Tensor1D // -1 beyond L_max
  })
}

/**
 * Adds the overlong penalty to outcome rewards: `R + computeOverlongPenalty(|y|)`.
 * @param rewards `[batch]` float32. @param lengths `[batch]` response lengths in tokens.
 * @returns `[batch]` float32.
 */
export function shapeOverlongRewards(
  rewards: tf.Tensor1D,
  lengths: tf.Tensor1D,
  config: OverlongConfig,
): tf.Tensor1D {
  if (rewards.rank !== 1 || rewards.shape[0] !== lengths.shape[0]) {
    throw new ShapeError('rewards', `[${lengths.shape[0]}]`, rewards.shape)
  }
  return tf.tidy(() => rewards.toFloat().add(computeOverlongPenalty(lengths, config)) as tf.Tensor1D)
}
