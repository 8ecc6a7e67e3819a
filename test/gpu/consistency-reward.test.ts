import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  ConfigError,
  computeConsistencyRewards,
  signedOutcome,
  UNPARSEABLE_PENALTY,
} from '../../gpu/index.ts'

const close = (actual: ArrayLike<number>, expected: readonly number[], tol = 1e-6) => {
  assert.equal(actual.length, expected.length)
  for (let i = 0; i < expected.length; i++)
    assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`)
}

describe('gpu/consistency-reward', () => {
  it('consistency - (O + mean S) * S_l, z-scored across the m judgements', () => {
    // O = 0, S = [+1, +1, +1, -1]: mean S 0.5 -> raw [0.5, 0.5, 0.5, -0.5]; mean 0.25,
    // unbiased std sqrt((3*0.0625 + 0.5625)/3) = 0.5 -> [0.5, 0.5, 0.5, -1.5]
    const r = computeConsistencyRewards({ outcome: 0, judgements: [1, 1, 1, -1] })
    close(r.raw, [0.5, 0.5, 0.5, -0.5], 0)
    close(
      r.advantages,
      [0.25, 0.25, 0.25, -0.75].map((d) => d / (0.5 + 1e-6)),
    )
  })

  it('consistency - signed outcomes: r in {0, 1} enters as 2r - 1, graded r linearly; out of [0, 1] is named', () => {
    assert.deepEqual([0, 1, 0.5, 0.75].map(signedOutcome), [-1, 1, 0, 0.5])
    for (const bad of [-0.1, 1.5, Number.NaN])
      assert.throws(
        () => signedOutcome(bad),
        (e: unknown) => e instanceof ConfigError && e.field === 'outcome',
      )
    assert.throws(
      () => computeConsistencyRewards({ outcome: 2, judgements: [1] }),
      (e: unknown) => e instanceof ConfigError && e.field === 'outcome',
    )
  })

  it('consistency - a failed episode (r = 0, O = -1) rewards the judgements that call its step bad', () => {
    // O = -1, S = [+1, +1, -1]: mean S 1/3 -> (O + mean S) = -2/3, raw [-2/3, -2/3, +2/3]; with the
    // unsigned O = 0 the majority (+1) would have been rewarded instead: raw [1/3, 1/3, -1/3].
    const r = computeConsistencyRewards({ outcome: signedOutcome(0), judgements: [1, 1, -1] })
    close(r.raw, [-2 / 3, -2 / 3, 2 / 3], 1e-12)
    assert.ok(r.advantages[2]! > 0 && r.advantages[0]! < 0)
    close(
      computeConsistencyRewards({ outcome: 0, judgements: [1, 1, -1] }).raw,
      [1 / 3, 1 / 3, -1 / 3],
      1e-12,
    )
  })

  it('consistency - an unparseable judgement gets the fixed penalty before the z-score', () => {
    // O = 1, S = [+1, +1, ?, ?]: mean S over the parseable 1 -> raw [2, 2, -3, -3]; mean -0.5,
    // deviations +-2.5, unbiased std sqrt(4*6.25/3) = 2.5*2/sqrt(3) -> +-sqrt(3)/2
    assert.equal(UNPARSEABLE_PENALTY, -3)
    const r = computeConsistencyRewards({ outcome: 1, judgements: Int8Array.from([1, 1, 0, 0]) })
    close(r.raw, [2, 2, -3, -3], 0)
    const a = 2.5 / ((2.5 * 2) / Math.sqrt(3) + 1e-6)
    close(r.advantages, [a, a, -a, -a])
    assert.ok(Math.abs(a - Math.sqrt(3) / 2) < 1e-6)
    // O = 1, S = [+1, -1, ?]: mean S 0 -> raw [1, -1, -3]
    close(computeConsistencyRewards({ outcome: 1, judgements: [1, -1, 0] }).raw, [1, -1, -3], 0)
    // a custom penalty
    close(computeConsistencyRewards({ outcome: 1, judgements: [1, 0], penalty: -10 }).raw, [2, -10], 0)
  })

  it('consistency - one judgement, or all rewards equal, gives advantages of exactly 0', () => {
    close(computeConsistencyRewards({ outcome: 1, judgements: [1] }).advantages, [0], 0)
    const same = computeConsistencyRewards({ outcome: 1, judgements: [1, 1, 1] })
    close(same.raw, [2, 2, 2], 0)
    close(same.advantages, [0, 0, 0], 0)
    close(computeConsistencyRewards({ outcome: 1, judgements: [0, 0] }).advantages, [0, 0], 0)
  })

  it('consistency - bad inputs are ConfigErrors', () => {
    assert.throws(() => computeConsistencyRewards({ outcome: 1, judgements: [3] }), ConfigError)
    assert.throws(() => computeConsistencyRewards({ outcome: Number.NaN, judgements: [1] }), ConfigError)
    assert.throws(
      () => computeConsistencyRewards({ outcome: 1, judgements: [1], penalty: Number.NEGATIVE_INFINITY }),
      /penalty/,
    )
  })
})
