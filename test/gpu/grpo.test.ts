import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { ConfigError, ShapeError, UnknownVariantError } from '../../gpu/errors.ts'
import {
  computePolicyLossGrpoTcr,
  computeTokenLossGrpoTcr,
  GRPO_TCR_DEFAULTS,
  type GrpoTcrConfig,
  PolicyMetric,
} from '../../gpu/grpo.ts'
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
    close([metrics[PolicyMetric.Loss].dataSync()[0]!], [13.02 / 6], 1e-5)
    close([metrics[PolicyMetric.ClipFracHigh].dataSync()[0]!], [1 / 6], 1e-7)
    close([metrics[PolicyMetric.ClipFracLow].dataSync()[0]!], [1 / 6], 1e-7)
    close([metrics[PolicyMetric.DualClipFrac].dataSync()[0]!], [1 / 6], 1e-7)
    const ratioMean = (1.5 + 1 + 20 + 0.5 + 5 + 0.5) / 6
    close([metrics[PolicyMetric.RatioMean].dataSync()[0]!], [ratioMean], 1e-5)
    const k3 = ratios.slice(0, 6).reduce((s, r) => s + r - 1 - Math.log(r), 0) / 6
    close([metrics[PolicyMetric.ApproxKl].dataSync()[0]!], [k3], 1e-5)
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
    assert.equal(metrics[PolicyMetric.DualClipFrac].dataSync()[0], 1)
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
