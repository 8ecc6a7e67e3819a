import * as tf from '@tensorflow/tfjs'
import { AggregationMode, getAggregator } from './aggregation.ts'
import { ConfigError } from './errors.ts'
import { FusedKernel } from './fused-kernel-names.ts'
import { clipConstants, LOG_RATIO_CLAMP, tokenRatio } from './grpo-tcr-token.ts'
import { assertMatrix, assertShape } from './shape.ts'

/** Settings of the GRPO-TCR policy loss. */
export interface GrpoTcrConfig {
  /** Lower clip range: the ratio is clipped below at `1 - eps_low`. DemyAgent: 0.2. */
  eps_low: number
  /** Upper clip range (clip-higher, DAPO): the ratio is clipped above at `1 + eps_high`. DemyAgent: 0.28. */
  eps_high: number
  /** Dual-clip bound `c` (> 1): for `A < 0` the token loss is at most `c * |A|`. DemyAgent: 10. */
  c: number
  /** How token losses become one scalar; DemyAgent: `token-mean`. */
  aggregation: AggregationMode
}

/** DemyAgent's GRPO-TCR defaults (arXiv 2510.11701): token-mean, clip-higher 0.2 / 0.28, dual clip 10. */
export const GRPO_TCR_DEFAULTS: Readonly<GrpoTcrConfig> = Object.freeze({
  eps_low: 0.2,
  eps_high: 0.28,
  c: 10,
  aggregation: AggregationMode.TokenMean,
})

/** Input of the GRPO-TCR policy loss; every tensor is `[batch, seqLen]` float32. */
export interface PolicyLossInput {
  /** log pi_theta of each token under the model being trained (carries the gradient). */
  logProbs: tf.Tensor2D
  /**
   * The log-probabilities the ratio is taken against: log pi_behavior of each token as recorded by
   * the engine that sampled it (not recomputed), or, under an off-policy correction
   * (`gpu/off-policy.ts`), the proximal policy's.
   */
  behaviorLogProbs: tf.Tensor2D
  /** Token advantages (group- and task-normalized). */
  advantages: tf.Tensor2D
  /** 1 for a response token the loss trains on; 0 for prompt, tool output and padding. */
  mask: tf.Tensor2D
  /**
   * Optional multipliers of each token's loss (an off-policy correction's importance weights; no
   * gradient flows through them); default 1. Unlike the mask they leave the aggregation's
   * denominator as it is: a weight-0 token still counts in the token mean.
   */
  weights?: tf.Tensor2D
}

/**
 * Metric keys of the policy loss, each a masked mean over the trained tokens:
 * - `policy/loss`: the aggregated policy-gradient loss;
 * - `policy/clip_frac_high`: share of tokens with `A > 0` and `r > 1 + eps_high` (upper clip active, no gradient);
 * - `policy/clip_frac_low`: share of tokens with `A < 0` and `r < 1 - eps_low` (lower clip active, no gradient);
 * - `policy/dual_clip_frac`: share of tokens with `A < 0` and `r > c` (dual clip active, no gradient);
 * - `policy/approx_kl`: k3 estimate of KL(pi_behavior || pi_theta), `r - 1 - log r`;
 * - `policy/ratio_mean`: mean importance ratio `r`.
 */
export const PolicyMetric = {
  Loss: 'policy/loss',
  ClipFracHigh: 'policy/clip_frac_high',
  ClipFracLow: 'policy/clip_frac_low',
  DualClipFrac: 'policy/dual_clip_frac',
  ApproxKl: 'policy/approx_kl',
  RatioMean: 'policy/ratio_mean',
} as const
export type PolicyMetric = (typeof PolicyMetric)[keyof typeof PolicyMetric]

/** A loss (a float32 scalar the caller disposes) and its metrics' values. */
export interface LossResult<K extends string = string> {
  loss: tf.Scalar
  metrics: Record<K, number>
}

tf.registerGradient({
  kernelName: FusedKernel.GrpoTcrTokenLoss,
  inputsToSave: ['logProbs', 'behaviorLogProbs', 'advantages'],
  gradFunc: (dy, saved, attrs) => {
    const [logProbs, behaviorLogProbs, advantages] = saved as [tf.Tensor, tf.Tensor, tf.Tensor]
    const zeros = (t: tf.Tensor) => () => tf.zerosLike(t)
    return {
      logProbs: () =>
        tf
          .engine()
          .runKernel(
            FusedKernel.GrpoTcrTokenLossGrad,
            { dy: dy as tf.Tensor, logProbs, behaviorLogProbs, advantages },
            attrs,
          ) as tf.Tensor,
      // the behavior log-probabilities and the advantages are data: no gradient flows to them
      behaviorLogProbs: zeros(behaviorLogProbs),
      advantages: zeros(advantages),
    }
  },
})

function checkConfig({ eps_low, eps_high, c }: GrpoTcrConfig): void {
  if (!(eps_low >= 0 && eps_low < 1)) throw new ConfigError('eps_low', eps_low, 'must be in [0, 1)')
  if (!(eps_high >= 0)) throw new ConfigError('eps_high', eps_high, 'must be >= 0')
  if (!(c > 1)) throw new ConfigError('c', c, 'must be > 1')
}

function checkInput(input: PolicyLossInput): void {
  const shape = assertMatrix('logProbs', input.logProbs)
  assertShape('behaviorLogProbs', input.behaviorLogProbs, shape)
  assertShape('advantages', input.advantages, shape)
  assertShape('mask', input.mask, shape)
  if (input.weights) assertShape('weights', input.weights, shape)
}

/** Importance ratio `r = exp(logp_theta - logp_behavior)`, log-ratio clamped to [-20, 20] as verl. */
function importanceRatio(input: PolicyLossInput): { logRatio: tf.Tensor2D; ratio: tf.Tensor2D } {
  const logRatio = input.logProbs
    .sub(input.behaviorLogProbs)
    .clipByValue(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP) as tf.Tensor2D
  return { logRatio, ratio: logRatio.exp() } // r = exp(logp_theta - logp_behavior)
}

/**
 * The metrics of `PolicyMetric` but the loss, from the loss's inputs as arrays `[batch * seqLen]`
 * (row-major, float32 values): masked means `sum(x m) / max(sum(m), 1)`, the ratio and the
 * thresholds in float32 as the loss computes them (`tokenRatio`, `clipConstants`).
 */
export function grpoTcrMetrics(
  input: {
    logProbs: Float32Array
    behaviorLogProbs: Float32Array
    advantages: Float32Array
    mask: Float32Array
  },
  config: GrpoTcrConfig,
): Record<Exclude<PolicyMetric, 'policy/loss'>, number> {
  const k = clipConstants(config.eps_low, config.eps_high, config.c)
  let mass = 0
  let clipHigh = 0
  let clipLow = 0
  let dual = 0
  let k3 = 0
  let ratioSum = 0
  for (let i = 0; i < input.mask.length; i++) {
    const m = input.mask[i]!
    if (m === 0) continue
    const { logRatio, r } = tokenRatio(input.logProbs[i]!, input.behaviorLogProbs[i]!)
    const a = input.advantages[i]!
    mass += m
    if (a > 0 && r > k.high) clipHigh += m
    if (a < 0 && r < k.low) clipLow += m
    if (a < 0 && r > k.c) dual += m
    k3 += (r - 1 - logRatio) * m // k3 = r - 1 - log r
    ratioSum += r * m
  }
  const mean = (x: number) => x / Math.max(mass, 1)
  return {
    [PolicyMetric.ClipFracHigh]: mean(clipHigh),
    [PolicyMetric.ClipFracLow]: mean(clipLow),
    [PolicyMetric.DualClipFrac]: mean(dual),
    [PolicyMetric.ApproxKl]: mean(k3),
    [PolicyMetric.RatioMean]: mean(ratioSum),
  }
}

/**
 * Per-token GRPO-TCR loss (PPO clip, Schulman et al. arXiv 1707.06347 eq. 7; clip-higher, DAPO
 * arXiv 2503.14476 eq. 10; dual clip, Ye et al. arXiv 1912.09729 eq. 5; DemyAgent arXiv 2510.11701):
 * `L = -min(r*A, clip(r, 1-eps_low, 1+eps_high)*A)`, and for `A < 0` `L = min(L, c*|A|)`; times
 * `input.weights` when given. Masked-out tokens are not zeroed here; the aggregation applies the mask.
 * @returns `[batch, seqLen]` float32 per-token loss.
 * @throws ShapeError on shapes that differ; ConfigError on a bad config.
 */
export function computeTokenLossGrpoTcr(
  input: PolicyLossInput,
  config: GrpoTcrConfig = GRPO_TCR_DEFAULTS,
): tf.Tensor2D {
  checkInput(input)
  checkConfig(config)
  if (tf.getKernel(FusedKernel.GrpoTcrTokenLoss, tf.getBackend())) {
    // one kernel, its gradient another, where the backend has them (the native engine)
    const { logProbs, behaviorLogProbs, advantages } = input
    const attrs = { epsLow: config.eps_low, epsHigh: config.eps_high, c: config.c }
    return tf.tidy(() => {
      const loss = tf
        .engine()
        .runKernel(
          FusedKernel.GrpoTcrTokenLoss,
          { logProbs, behaviorLogProbs, advantages },
          attrs,
        ) as tf.Tensor2D
      return input.weights ? (loss.mul(input.weights) as tf.Tensor2D) : loss // w_t * L_t
    })
  }
  return tf.tidy(() => {
    const a = input.advantages
    const { ratio } = importanceRatio(input)
    const unclipped = a.mul(ratio).neg() // -r*A
    const clipped = a.mul(ratio.clipByValue(1 - config.eps_low, 1 + config.eps_high)).neg() // -clip(r, 1-eps_low, 1+eps_high)*A
    const pg = unclipped.maximum(clipped) // -min(r*A, clip(r)*A)
    const dual = pg.minimum(a.mul(-config.c)) // min(L, -c*A) = min(L, c*|A|) for A < 0
    const loss = tf.where(a.less(0), dual, pg) as tf.Tensor2D
    return input.weights ? (loss.mul(input.weights) as tf.Tensor2D) : loss // w_t * L_t
  })
}

/**
 * GRPO-TCR policy loss (DemyAgent arXiv 2510.11701): `computeTokenLossGrpoTcr` aggregated by
 * `config.aggregation` over the mask, with the clip and KL metrics of `PolicyMetric`
 * (`grpoTcrMetrics`, and the loss's value).
 * @returns `{loss, metrics}`: the loss a float32 scalar owned by the caller, the metrics numbers.
 * @throws ShapeError on shapes that differ; ConfigError on a bad config;
 *   UnknownVariantError on an unknown aggregation mode.
 */
export function computePolicyLossGrpoTcr(
  input: PolicyLossInput,
  config: GrpoTcrConfig = GRPO_TCR_DEFAULTS,
): LossResult<PolicyMetric> {
  const aggregate = getAggregator(config.aggregation)
  const tokenLoss = computeTokenLossGrpoTcr(input, config)
  const loss = tf.tidy(() => aggregate(tokenLoss, input.mask))
  tokenLoss.dispose()
  // The metrics take no gradient: read once as arrays, they cost no kernels and no saved tensors.
  const metrics = {
    [PolicyMetric.Loss]: loss.dataSync()[0]!,
    ...grpoTcrMetrics(
      {
        logProbs: input.logProbs.dataSync() as Float32Array,
        behaviorLogProbs: input.behaviorLogProbs.dataSync() as Float32Array,
        advantages: input.advantages.dataSync() as Float32Array,
        mask: input.mask.dataSync() as Float32Array,
      },
      config,
    ),
  }
  return { loss, metrics }
}
