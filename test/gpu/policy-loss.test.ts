import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { UnknownVariantError } from '../../gpu/errors.ts'
import { computePolicyLossGrpoTcr, GRPO_TCR_DEFAULTS, PolicyMetric } from '../../gpu/grpo.ts'
import { getPolicyLoss, type PolicyLoss, PolicyLosses, PolicyLossName } from '../../gpu/policy-loss.ts'
import { useTestBackend } from '../support/test-backend.ts'

// The six hand-worked tokens of grpo.test.ts (defaults eps_low 0.2, eps_high 0.28, c 10) plus one
// padding token: token losses -1.28, -1, 10, 0.8, 5, -0.5, token mean 13.02 / 6.
const ratios = [1.5, 1, 20, 0.5, 5, 0.5, 3]
const behaviorRow = [-1, -2, -3, -0.5, -1.5, -2.5, -4]
const input = () => ({
  logProbs: tf.tensor2d([ratios.map((r, i) => Math.log(r) + behaviorRow[i]!)]),
  behaviorLogProbs: tf.tensor2d([behaviorRow]),
  advantages: tf.tensor2d([[1, 1, -1, -1, -1, 1, 7]]),
  mask: tf.tensor2d([[1, 1, 1, 1, 1, 1, 0]]),
})

describe('gpu/policy-loss', () => {
  before(async () => {
    await useTestBackend()
  })

  it('registry - lists grpo-tcr, the loss of the RL step', () => {
    assert.deepEqual(Object.keys(PolicyLosses).sort(), ['grpo-tcr'])
    assert.deepEqual(Object.values(PolicyLossName).sort(), Object.keys(PolicyLosses).sort())
    assert.equal(getPolicyLoss(PolicyLossName.GrpoTcr), computePolicyLossGrpoTcr)
    assert.ok(Object.isFrozen(PolicyLosses))
  })

  it('registry - an unknown name is an UnknownVariantError naming the valid ones', () => {
    assert.throws(
      () => getPolicyLoss('ppo-kl'),
      (e: unknown) =>
        e instanceof UnknownVariantError &&
        e.registry === 'policy loss' &&
        e.message === "unknown policy loss 'ppo-kl'; valid names: grpo-tcr",
    )
  })

  it('grpo-tcr - the registered loss gives the hand-worked numbers of grpo.test.ts, bit for bit as the direct call', () => {
    const loss: PolicyLoss = getPolicyLoss('grpo-tcr')
    const x = input()
    const got = loss(x, GRPO_TCR_DEFAULTS)
    const direct = computePolicyLossGrpoTcr(x, GRPO_TCR_DEFAULTS)
    assert.ok(Math.abs(got.loss.dataSync()[0]! - 13.02 / 6) <= 1e-5)
    assert.ok(Math.abs(got.metrics[PolicyMetric.ClipFracHigh] - 1 / 6) <= 1e-7)
    assert.ok(Math.abs(got.metrics[PolicyMetric.ClipFracLow] - 1 / 6) <= 1e-7)
    assert.ok(Math.abs(got.metrics[PolicyMetric.DualClipFrac] - 1 / 6) <= 1e-7)
    assert.equal(got.loss.dataSync()[0], direct.loss.dataSync()[0])
    for (const k of Object.values(PolicyMetric)) assert.equal(got.metrics[k], direct.metrics[k], k)
    tf.dispose([got.loss, direct.loss])
    tf.dispose(Object.values(x))
  })
})
