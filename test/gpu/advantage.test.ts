import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  broadcastToTokens,
  computeAdvantageGrpo,
  computeAdvantageGrpoNoStd,
  getAdvantageEstimator,
  normalizeTaskAdvantages,
} from '../../gpu/advantage.ts'
import { ShapeError, UnknownVariantError } from '../../gpu/errors.ts'
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

/** Plain-loop reference of the GRPO advantage (unbiased std, equal rewards -> 0). */
function loopGrpo(rewards: number[], groups: number[], divide: boolean): number[] {
  return rewards.map((r, i) => {
    const members = rewards.filter((_, j) => groups[j] === groups[i])
    const mean = members.reduce((s, v) => s + v, 0) / members.length
    if (members.every((v) => v === members[0])) return 0
    const std = Math.sqrt(members.reduce((s, v) => s + (v - mean) ** 2, 0) / Math.max(members.length - 1, 1))
    return divide ? (r - mean) / (std + 1e-6) : r - mean
  })
}

describe('gpu/advantage', () => {
  before(async () => {
    await useTestBackend()
  })

  it('grpo - a two-group batch gives the hand-worked advantages', () => {
    // group a: rewards 1, 0, 0, 0 -> mean 0.25, unbiased std sqrt(0.75 / 3) = 0.5
    // group b: rewards 2, 0, 1    -> mean 1,    unbiased std sqrt(2 / 2) = 1
    const rewards = tf.tensor1d([1, 2, 0, 0, 0, 1, 0])
    const groupIds = ['a', 'b', 'a', 'b', 'a', 'b', 'a']
    const adv = computeAdvantageGrpo({ rewards, groupIds }).dataSync()
    const s = 0.5 + 1e-6
    close(adv, [0.75 / s, 1 / 1.000001, -0.25 / s, -1 / 1.000001, -0.25 / s, 0, -0.25 / s], 1e-6)
    const noStd = computeAdvantageGrpoNoStd({ rewards, groupIds }).dataSync()
    close(noStd, [0.75, 1, -0.25, -1, -0.25, 0, -0.25], 1e-7)
  })

  it('grpo - equal rewards and single-sample groups give exactly 0, never NaN', () => {
    const rewards = tf.tensor1d([0.1, 0.1, 0.1, 0.3, 0.3, 7])
    const groupIds = [0, 0, 0, 1, 1, 2]
    for (const name of ['grpo', 'grpo-no-std']) {
      const adv = getAdvantageEstimator(name)({ rewards, groupIds }).dataSync()
      assert.deepEqual([...adv], [0, 0, 0, 0, 0, 0], name)
    }
  })

  it('grpo - tensor version matches a plain loop across shapes and seeds (tol 1e-5)', () => {
    for (const [seed, batch, groups] of [
      [1, 4, 1],
      [2, 16, 4],
      [3, 33, 7],
      [4, 64, 16],
    ] as const) {
      const rewards = Array.from(tf.randomUniform([batch], -3, 3, 'float32', seed).dataSync())
      // round half of them so that some groups tie
      const r = rewards.map((v, i) => (i % 2 ? Math.round(v) : v))
      const ids = Array.from(tf.randomUniform([batch], 0, groups, 'int32', seed + 100).dataSync())
      for (const divide of [true, false]) {
        const fn = divide ? computeAdvantageGrpo : computeAdvantageGrpoNoStd
        const got = fn({ rewards: tf.tensor1d(r), groupIds: ids }).dataSync()
        const want = loopGrpo(
          r.map((v) => Math.fround(v)),
          ids,
          divide,
        )
        close(got, want, 1e-5 * Math.max(1, ...want.map(Math.abs)))
      }
    }
  })

  it('grpo - mismatched group ids throw ShapeError', () => {
    assert.throws(
      () => computeAdvantageGrpo({ rewards: tf.tensor1d([1, 2]), groupIds: [0] }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'groupIds',
    )
    assert.throws(
      () => computeAdvantageGrpo({ rewards: tf.tensor2d([[1, 2]]) as unknown as tf.Tensor1D, groupIds: [0] }),
      ShapeError,
    )
  })

  it('grpo - an unknown estimator name lists the valid ones', () => {
    assert.throws(
      () => getAdvantageEstimator('gae'),
      (e: unknown) =>
        e instanceof UnknownVariantError &&
        e.message === "unknown advantage estimator 'gae'; valid names: grpo, grpo-no-std",
    )
  })

  it('broadcast - puts each sample advantage on its masked tokens', () => {
    const out = broadcastToTokens(
      tf.tensor1d([2, -1]),
      tf.tensor2d([
        [0, 1, 1],
        [1, 0, 0],
      ]),
    )
    assert.deepEqual(
      out.arraySync().map((row) => row.map((v) => v + 0)), // + 0 turns -0 into 0
      [
        [0, 2, 2],
        [-1, 0, 0],
      ],
    )
  })

  it('task normalization - hand-worked values on one task', () => {
    // tokens of task t: 1, 1 (sample 0), -1 (sample 1): mean 1/3, population std sqrt(8/9)
    const out = normalizeTaskAdvantages({
      advantages: tf.tensor2d([
        [1, 1, 9],
        [-1, 5, 5],
      ]),
      mask: tf.tensor2d([
        [1, 1, 0],
        [1, 0, 0],
      ]),
      taskIds: ['t', 't'],
    })
    const s = Math.sqrt(8 / 9) + 1e-6
    close(out.dataSync(), [2 / 3 / s, 2 / 3 / s, 0, -(4 / 3) / s, 0, 0], 1e-6)
  })

  it('task normalization - two tasks of different reward scales each get mean 0 and std 1 over their tokens', () => {
    const batch = 12
    const seqLen = 9
    const taskIds = Array.from({ length: batch }, (_, i) => (i % 3 === 0 ? 'math' : 'shop'))
    const scale = taskIds.map((t) => (t === 'math' ? 100 : 0.01))
    const raw = tf.randomNormal([batch, seqLen], 0, 1, 'float32', 7).arraySync() as number[][]
    const adv = tf.tensor2d(raw.map((row, i) => row.map((v) => v * scale[i]! + scale[i]!)))
    const lengths = Array.from(tf.randomUniform([batch], 1, seqLen + 1, 'int32', 8).dataSync())
    const mask = tf.tensor2d(
      lengths.map((len) => Array.from({ length: seqLen }, (_, t) => (t < len ? 1 : 0))),
    )
    const out = normalizeTaskAdvantages({ advantages: adv, mask, taskIds }).arraySync()
    const m = mask.arraySync()
    for (const task of ['math', 'shop']) {
      const tokens: number[] = []
      out.forEach((row, i) => {
        row.forEach((v, t) => {
          if (taskIds[i] === task && m[i]![t] === 1) tokens.push(v)
          if (m[i]![t] === 0) assert.ok(v === 0, `unmasked token ${v}`)
        })
      })
      const mean = tokens.reduce((s, v) => s + v, 0) / tokens.length
      const std = Math.sqrt(tokens.reduce((s, v) => s + (v - mean) ** 2, 0) / tokens.length)
      assert.ok(Math.abs(mean) < 1e-5, `${task} mean ${mean}`)
      assert.ok(Math.abs(std - 1) < 1e-3, `${task} std ${std}`) // 1e-6 / std(0.01-scale) ~ 1e-4
    }
  })

  it('task normalization - a task whose advantages are all equal gets 0', () => {
    const out = normalizeTaskAdvantages({
      advantages: tf.tensor2d([
        [0.3, 0.3],
        [0.3, 0.3],
        [1, -1],
      ]),
      mask: tf.tensor2d([
        [1, 1],
        [1, 0],
        [1, 1],
      ]),
      taskIds: [0, 0, 1],
    }).arraySync()
    assert.deepEqual(
      out.slice(0, 2).map((row) => row.map((v) => v + 0)),
      [
        [0, 0],
        [0, 0],
      ],
    )
    close(out[2]!, [1 / (1 + 1e-6), -1 / (1 + 1e-6)], 1e-6)
  })

  it('task normalization - shape errors name the argument', () => {
    assert.throws(
      () =>
        normalizeTaskAdvantages({
          advantages: tf.zeros([2, 3]) as tf.Tensor2D,
          mask: tf.zeros([2, 4]) as tf.Tensor2D,
          taskIds: [0, 1],
        }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'mask',
    )
    assert.throws(
      () =>
        normalizeTaskAdvantages({
          advantages: tf.zeros([2, 3]) as tf.Tensor2D,
          mask: tf.zeros([2, 3]) as tf.Tensor2D,
          taskIds: [0],
        }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'taskIds',
    )
  })
})
