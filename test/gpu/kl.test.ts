import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { ShapeError, UnknownVariantError } from '../../gpu/errors.ts'
import { computeKlK1, computeKlK2, computeKlK3, getKlEstimator } from '../../gpu/kl.ts'
import { useTestBackend } from '../support/test-backend.ts'

describe('gpu/kl', () => {
  before(async () => {
    await useTestBackend()
  })

  it('kl - k3 is exactly 0 for equal log-probabilities and positive otherwise', () => {
    const lp = tf.tensor2d([[-0.1, -2, -7]])
    assert.deepEqual([...computeKlK3(lp, lp).dataSync()], [0, 0, 0])
    const other = computeKlK3(lp, tf.tensor2d([[-0.3, -1, -7.5]])).dataSync()
    for (const v of other) assert.ok(v > 0, `k3 ${v}`)
  })

  it('kl - hand-worked k1, k2, k3 for p = 0.5, p_ref = 0.25', () => {
    const lp = tf.tensor2d([[Math.log(0.5)]])
    const ref = tf.tensor2d([[Math.log(0.25)]])
    // k1 = log 2; k2 = (log 2)^2 / 2; k3 = 0.5 - log 0.5 - 1 = log 2 - 0.5
    assert.ok(Math.abs(computeKlK1(lp, ref).dataSync()[0]! - Math.LN2) < 1e-6)
    assert.ok(Math.abs(computeKlK2(lp, ref).dataSync()[0]! - Math.LN2 ** 2 / 2) < 1e-6)
    assert.ok(Math.abs(computeKlK3(lp, ref).dataSync()[0]! - (Math.LN2 - 0.5)) < 1e-6)
  })

  it('kl - the expectation of k1 and k3 under pi_theta equals the exact KL inside the clamp (tol 1e-5)', () => {
    for (const seed of [31, 32, 33]) {
      const vocab = 11
      // Logits of std 0.5: every k3 term stays below the clamp (checked), where k3 is unbiased.
      const p = tf.randomNormal([1, vocab], 0, 0.5, 'float32', seed).logSoftmax() as tf.Tensor2D
      const q = tf.randomNormal([1, vocab], 0, 0.5, 'float32', seed + 1).logSoftmax() as tf.Tensor2D
      assert.ok(Math.max(...computeKlK3(p, q).dataSync()) < 10, `seed ${seed}: a k3 term reached the clamp`)
      const probs = p.exp().dataSync()
      const [pa, qa] = [p.dataSync(), q.dataSync()]
      const exact = Array.from(probs, (pv, v) => pv * (pa[v]! - qa[v]!)).reduce((s, x) => s + x, 0)
      for (const name of ['k1', 'k3']) {
        const est = getKlEstimator(name)(p, q).dataSync()
        const expectation = Array.from(probs, (pv, v) => pv * est[v]!).reduce((s, x) => s + x, 0)
        assert.ok(Math.abs(expectation - exact) < 1e-5, `${name} seed ${seed}: ${expectation} vs ${exact}`)
      }
    }
  })

  it('kl - k3 is clamped to [-10, 10] as verl: a token with log-ratio 30 gives 10, not exp(20) - 21', () => {
    const lp = tf.tensor2d([[-30, 0, -2.5]])
    const ref = tf.tensor2d([[0, -30, -0.5]])
    const k3 = [...computeKlK3(lp, ref).dataSync()]
    // x = ref - lp = [30 -> 20, -30 -> -20, 2]; exp(2) - 2 - 1 = 4.389 stays below the bound.
    assert.equal(k3[0], 10)
    assert.ok(Math.abs(k3[1]! - 10) < 1e-6, `exp(-20) + 20 - 1 = 19 clamps to 10, got ${k3[1]}`)
    assert.ok(Math.abs(k3[2]! - (Math.exp(2) - 3)) < 1e-5, `${k3[2]}`)
  })

  it('kl - unknown estimators list the valid names; shapes must match', () => {
    assert.throws(
      () => getKlEstimator('k4'),
      (e: unknown) => e instanceof UnknownVariantError && e.message.endsWith('valid names: k1, k2, k3'),
    )
    assert.throws(
      () => computeKlK3(tf.zeros([2, 3]) as tf.Tensor2D, tf.zeros([3, 2]) as tf.Tensor2D),
      ShapeError,
    )
  })
})
