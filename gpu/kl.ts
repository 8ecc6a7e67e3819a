import * as tf from '@tensorflow/tfjs'
import { defineRegistry, lookupVariant } from './registry.ts'
import { assertMatrix, assertShape } from './shape.ts'

/**
 * A per-token estimator of KL(pi_theta || pi_ref) from tokens sampled by pi_theta.
 * @param logProbs `[batch, seqLen]` float32, log pi_theta of each token.
 * @param refLogProbs `[batch, seqLen]` float32, log pi_ref of the same tokens.
 * @returns `[batch, seqLen]` float32 per-token estimates (aggregate them with the loss mask).
 */
export type KlEstimator = (logProbs: tf.Tensor2D, refLogProbs: tf.Tensor2D) => tf.Tensor2D

function check(logProbs: tf.Tensor2D, refLogProbs: tf.Tensor2D): void {
  assertShape('refLogProbs', refLogProbs, assertMatrix('logProbs', logProbs))
}

/**
 * k1 estimator (Schulman, "Approximating KL divergence", 2020): `log pi_theta - log pi_ref`.
 * Unbiased, high variance, can be negative per token.
 * @throws ShapeError when the shapes differ.
 */
export function computeKlK1(logProbs: tf.Tensor2D, refLogProbs: tf.Tensor2D): tf.Tensor2D {
  check(logProbs, refLogProbs)
  return tf.tidy(() => logProbs.sub(refLogProbs) as tf.Tensor2D) // k1 = log(pi/pi_ref)
}

/**
 * k2 estimator (Schulman 2020): `0.5 * (log pi_theta - log pi_ref)^2`. Biased, low variance, >= 0.
 * @throws ShapeError when the shapes differ.
 */
export function computeKlK2(logProbs: tf.Tensor2D, refLogProbs: tf.Tensor2D): tf.Tensor2D {
  check(logProbs, refLogProbs)
  return tf.tidy(() => logProbs.sub(refLogProbs).square().mul(0.5) as tf.Tensor2D) // k2 = (log r)^2 / 2
}

/**
 * k3 estimator (Schulman 2020; the GRPO KL term, DeepSeekMath arXiv 2402.03300 eq. 4):
 * with `x = log pi_ref - log pi_theta`, `k3 = exp(x) - x - 1`. Unbiased, low variance, >= 0, and
 * exactly 0 where the two log-probabilities are equal. As verl's `low_var_kl`: `x` is clamped to
 * [-20, 20] so that `exp` cannot overflow, and the estimate itself to [-10, 10]
 * (`K3_CLAMP`), so that one token whose log-ratio to the reference is large (exp(20) ~ 4.9e8)
 * cannot dominate the loss; its gradient is then 0.
 * @returns `[batch, seqLen]` float32 in [0, 10].
 * @throws ShapeError when the shapes differ.
 */
export function computeKlK3(logProbs: tf.Tensor2D, refLogProbs: tf.Tensor2D): tf.Tensor2D {
  check(logProbs, refLogProbs)
  return tf.tidy(() => {
    const x = refLogProbs.sub(logProbs).clipByValue(-20, 20)
    return x.exp().sub(x).sub(1).clipByValue(-K3_CLAMP, K3_CLAMP) as tf.Tensor2D // k3 = clamp(exp(x) - x - 1, -10, 10)
  })
}

/** Bound of the per-token k3 estimate, `[-10, 10]`, as verl's `low_var_kl`. */
export const K3_CLAMP = 10

/** Registered KL estimators, by name. */
export const KlEstimators = defineRegistry<KlEstimator>({ k1: computeKlK1, k2: computeKlK2, k3: computeKlK3 })
/** Names of the registered KL estimators. */
export const KlEstimatorName = { K1: 'k1', K2: 'k2', K3: 'k3' } as const
export type KlEstimatorName = (typeof KlEstimatorName)[keyof typeof KlEstimatorName]

/**
 * Looks a KL estimator up by name.
 * @throws UnknownVariantError listing the valid names.
 */
export function getKlEstimator(name: string): KlEstimator {
  return lookupVariant('KL estimator', KlEstimators, name)
}
