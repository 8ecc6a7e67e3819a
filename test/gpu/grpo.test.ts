import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { ConfigError, ShapeError, UnknownVariantError } from '../../gpu/errors.ts'
import { FusedKernel } from '../../gpu/fused-kernel-names.ts'
import {
  computePolicyLossGrpoTcr,
  computeTokenLossGrpoTcr,
  GRPO_TCR_DEFAULTS,
  type GrpoTcrConfig,
  grpoTcrMetrics,
  PolicyMetric,
} from '../../gpu/grpo.ts'
import { nativeAvailable } from '../support/native-compare.ts'
import { useTestBackend } from '../support/test-backend.ts'

const close = (actual: ArrayLike<number>, expected: readonly number[], tol: number) => {
  assert.equal(actual.length, expected.length)
  for (let i = 0; i < expected.length; i++) {
    assert.ok(
      Math.abs(actual[i]! - expected[i]!) <= tol,
      `index ${i}: ${actual[i]} vs ${expected[i]} (tol ${tol})`,
    )
  }
}

/** Plain-loop reference of the GRPO-TCR token loss. */
function loopTokenLoss(logp: number, behavior: number, a: number, c: GrpoTcrConfig): number {
  const r = Math.exp(Math.min(20, Math.max(-20, logp - behavior)))
  const clipped = Math.min(Math.max(r, 1 - c.eps_low), 1 + c.eps_high)
  const pg = -Math.min(r * a, clipped * a)
  return a < 0 ? Math.min(pg, c.c * Math.abs(a)) : pg
}

// Six hand-worked tokens under the defaults (eps_low 0.2, eps_high 0.28, c 10) plus one padding token:
//   A   r     token loss                         d loss / d logp (= -r*A where unclipped)
//   +1  1.5   -clip(1.5)*1 = -1.28 (upper clip)   0
//   +1  1.0   -1                                  -1
//   -1  20    min(max(20, 1.28), 10) = 10 (dual)  0
//   -1  0.5   max(0.5, 0.8) = 0.8 (lower clip)    0
//   -1  5     min(max(5, 1.28), 10) = 5           5
//   +1  0.5   -min(0.5, 0.8) = -0.5               -0.5
const ratios = [1.5, 1, 20, 0.5, 5, 0.5, 3]
const advs = [1, 1, -1, -1, -1, 1, 7]
const mask = tf.tensor2d([[1, 1, 1, 1, 1, 1, 0]])
const behavior = tf.tensor2d([[-1, -2, -3, -0.5, -1.5, -2.5, -4]])
const logProbs = tf.tensor2d([ratios.map((r, i) => Math.log(r) + behavior.arraySync()[0]![i]!)])
const advantages = tf.tensor2d([advs])

describe('gpu/grpo', () => {
  before(async () => {
    await useTestBackend()
  })

  it('grpo-tcr - hand-worked token losses, clip fractions and token-mean loss', () => {
    const tokens = computeTokenLossGrpoTcr({ logProbs, behaviorLogProbs: behavior, advantages, mask })
    close(tokens.dataSync().slice(0, 6), [-1.28, -1, 10, 0.8, 5, -0.5], 1e-5)
    const { loss, metrics } = computePolicyLossGrpoTcr({
      logProbs,
      behaviorLogProbs: behavior,
      advantages,
      mask,
    })
    close([loss.dataSync()[0]!], [(-1.28 - 1 + 10 + 0.8 + 5 - 0.5) / 6], 1e-5)
    close([metrics[PolicyMetric.Loss]], [13.02 / 6], 1e-5)
    close([metrics[PolicyMetric.ClipFracHigh]], [1 / 6], 1e-7)
    close([metrics[PolicyMetric.ClipFracLow]], [1 / 6], 1e-7)
    close([metrics[PolicyMetric.DualClipFrac]], [1 / 6], 1e-7)
    const ratioMean = (1.5 + 1 + 20 + 0.5 + 5 + 0.5) / 6
    close([metrics[PolicyMetric.RatioMean]], [ratioMean], 1e-5)
    const k3 = ratios.slice(0, 6).reduce((s, r) => s + r - 1 - Math.log(r), 0) / 6
    close([metrics[PolicyMetric.ApproxKl]], [k3], 1e-5)
  })

  it('grpo-tcr - clipped and dual-clipped tokens have zero gradient, the others -r*A / N', () => {
    const grad = tf.grad(
      (lp: tf.Tensor) =>
        computePolicyLossGrpoTcr({
          logProbs: lp as tf.Tensor2D,
          behaviorLogProbs: behavior,
          advantages,
          mask,
        }).loss,
    )(logProbs)
    close(grad.dataSync(), [0, -1 / 6, 0, 0, 5 / 6, -0.5 / 6, 0], 1e-5)
  })

  it('grpo-tcr - a ratio above 1 + eps_high with positive advantage is clipped: zero gradient', () => {
    for (const r of [1.2801, 1.5, 3]) {
      const lp = tf.tensor2d([[Math.log(r)]])
      const input = (x: tf.Tensor) => ({
        logProbs: x as tf.Tensor2D,
        behaviorLogProbs: tf.zeros([1, 1]) as tf.Tensor2D,
        advantages: tf.tensor2d([[2]]),
        mask: tf.ones([1, 1]) as tf.Tensor2D,
      })
      const g = tf.grad((x: tf.Tensor) => computePolicyLossGrpoTcr(input(x)).loss)(lp)
      assert.equal(g.dataSync()[0], 0, `r = ${r}`)
      close(computePolicyLossGrpoTcr(input(lp)).loss.dataSync(), [-2 * 1.28], 1e-6)
    }
  })

  it('grpo-tcr - a ratio far above 1 with negative advantage hits the dual clip', () => {
    const input = (x: tf.Tensor) => ({
      logProbs: x as tf.Tensor2D,
      behaviorLogProbs: tf.zeros([1, 1]) as tf.Tensor2D,
      advantages: tf.tensor2d([[-0.5]]),
      mask: tf.ones([1, 1]) as tf.Tensor2D,
    })
    const lp = tf.tensor2d([[Math.log(1000)]])
    const { loss, metrics } = computePolicyLossGrpoTcr(input(lp))
    close(loss.dataSync(), [10 * 0.5], 1e-6) // c * |A|
    assert.equal(metrics[PolicyMetric.DualClipFrac], 1)
    assert.equal(
      tf
        .grad((x: tf.Tensor) => computePolicyLossGrpoTcr(input(x)).loss)(lp)
        .dataSync()[0],
      0,
    )
  })

  it('grpo-tcr - tensor version matches a plain loop across shapes, seeds and configs (tol 1e-5)', () => {
    const configs: GrpoTcrConfig[] = [
      GRPO_TCR_DEFAULTS,
      { eps_low: 0.1, eps_high: 0.1, c: 3, aggregation: 'token-mean' },
    ]
    for (const [seed, batch, seqLen] of [
      [11, 1, 5],
      [12, 4, 16],
      [13, 7, 33],
    ] as const) {
      const lp = tf.randomUniform([batch, seqLen], -6, 0, 'float32', seed) as tf.Tensor2D
      const bh = lp.add(tf.randomNormal([batch, seqLen], 0, 1, 'float32', seed + 1)) as tf.Tensor2D
      const adv = tf.randomNormal([batch, seqLen], 0, 2, 'float32', seed + 2) as tf.Tensor2D
      const m = tf.ones([batch, seqLen]) as tf.Tensor2D
      const [lpA, bhA, advA] = [lp.dataSync(), bh.dataSync(), adv.dataSync()]
      for (const config of configs) {
        const got = computeTokenLossGrpoTcr(
          { logProbs: lp, behaviorLogProbs: bh, advantages: adv, mask: m },
          config,
        )
        const want = Array.from(lpA, (v, i) => loopTokenLoss(v, bhA[i]!, advA[i]!, config))
        const data = got.dataSync()
        for (let i = 0; i < want.length; i++) {
          assert.ok(
            Math.abs(data[i]! - want[i]!) <= 1e-5 * Math.max(1, Math.abs(want[i]!)),
            `${i}: ${data[i]} vs ${want[i]}`,
          )
        }
      }
    }
  })

  it('grpo-tcr - the native kernel and its gradient match the composed ops on every branch, ties included', {
    skip: !nativeAvailable && 'the native addon is not built',
  }, async () => {
    // log-ratios on each branch: on-policy (r = 1, a tie of the two terms), inside the clip, past
    // each bound, at the dual clip, past the clamp of +-20, and advantages of each sign and 0
    const logRatios = [0, 0.1, -0.1, Math.log(1.28), Math.log(0.8), 0.5, -0.5, Math.log(10), 3, 25, -25]
    const adv = [1, -1, 0, 2.5, -0.3]
    const lr: number[] = []
    const a: number[] = []
    for (const x of logRatios)
      for (const y of adv) {
        lr.push(x)
        a.push(y)
      }
    const n = lr.length
    const on = async (backend: string, config: GrpoTcrConfig) => {
      await tf.setBackend(backend)
      return tf.tidy(() => {
        const behavior = tf.tensor2d(
          Float32Array.from(lr, (_, i) => -1 - (i % 3)),
          [1, n],
        )
        const logp = tf.add(behavior, tf.tensor2d(lr, [1, n])) as tf.Tensor2D
        const input = (x: tf.Tensor) => ({
          logProbs: x as tf.Tensor2D,
          behaviorLogProbs: behavior,
          advantages: tf.tensor2d(a, [1, n]),
          mask: tf.ones([1, n]) as tf.Tensor2D,
        })
        const tokenLoss = Array.from(computeTokenLossGrpoTcr(input(logp), config).dataSync())
        const grad = tf.grad((x: tf.Tensor) => tf.sum(computeTokenLossGrpoTcr(input(x), config)) as tf.Scalar)
        return { tokenLoss, grad: Array.from(grad(logp).dataSync()) }
      })
    }
    try {
      for (const config of [
        GRPO_TCR_DEFAULTS,
        { eps_low: 0.1, eps_high: 0.1, c: 3, aggregation: 'token-mean' as const },
      ]) {
        const want = await on('cpu', config)
        const got = await on('native', config)
        assert.ok(tf.getKernel(FusedKernel.GrpoTcrTokenLoss, 'native'), 'the native engine has the kernel')
        // relative: a gradient the composed ops zero (past the clamp) is zero here too, not 1e-9
        const relClose = (x: number[], y: number[], what: string) => {
          for (const [i, w] of y.entries())
            assert.ok(Math.abs(x[i]! - w) <= 1e-6 * Math.abs(w) + 1e-12, `${what}[${i}]: ${x[i]} vs ${w}`)
        }
        relClose(got.tokenLoss, want.tokenLoss, 'token loss')
        relClose(got.grad, want.grad, 'gradient')
      }
    } finally {
      await useTestBackend()
    }
  })

  it('grpo-tcr - metrics weigh each token by its mask value; a batch with no mask mass gives 0', () => {
    // ratios 2, 1, 0.5 and 1 (mask 0); mask mass 2.5
    const input = {
      logProbs: Float32Array.from([Math.log(2), 0, Math.log(0.5), 0]),
      behaviorLogProbs: new Float32Array(4),
      advantages: Float32Array.from([1, 1, -1, -1]),
      mask: Float32Array.from([1, 0.5, 1, 0]),
    }
    const m = grpoTcrMetrics(input, GRPO_TCR_DEFAULTS)
    close([m[PolicyMetric.ClipFracHigh]], [1 / 2.5], 1e-12) // token 0: A > 0, r = 2 > 1.28
    close([m[PolicyMetric.ClipFracLow]], [1 / 2.5], 1e-12) // token 2: A < 0, r = 0.5 < 0.8
    assert.equal(m[PolicyMetric.DualClipFrac], 0)
    close([m[PolicyMetric.RatioMean]], [(2 + 0.5 + 0.5) / 2.5], 1e-7)
    // k3: (2 - 1 - ln 2) + 0.5 (1 - 1 - 0) + (0.5 - 1 + ln 2) = 0.5
    close([m[PolicyMetric.ApproxKl]], [0.5 / 2.5], 1e-7)
    const none = grpoTcrMetrics({ ...input, mask: new Float32Array(4) }, GRPO_TCR_DEFAULTS)
    assert.deepEqual(Object.values(none), [0, 0, 0, 0, 0])
  })

  it('grpo-tcr - bad configs and shapes are rejected with the argument named', () => {
    const input = { logProbs, behaviorLogProbs: behavior, advantages, mask }
    assert.throws(
      () => computePolicyLossGrpoTcr(input, { ...GRPO_TCR_DEFAULTS, eps_low: 1.5 }),
      (e: unknown) => e instanceof ConfigError && e.field === 'eps_low',
    )
    assert.throws(
      () => computePolicyLossGrpoTcr(input, { ...GRPO_TCR_DEFAULTS, c: 1 }),
      (e: unknown) => e instanceof ConfigError && e.field === 'c',
    )
    assert.throws(
      () => computePolicyLossGrpoTcr(input, { ...GRPO_TCR_DEFAULTS, aggregation: 'sum' as 'token-mean' }),
      UnknownVariantError,
    )
    assert.throws(
      () => computePolicyLossGrpoTcr({ ...input, mask: tf.ones([1, 6]) as tf.Tensor2D }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'mask',
    )
  })
})
