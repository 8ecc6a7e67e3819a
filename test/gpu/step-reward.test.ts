import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, computeGroupStepAdvantages, padTokenAdvantages, ShapeError } from '../../gpu/index.ts'
import {
  computeIntegratedStepRewards,
  meanJudgement,
  stepAdvantagesToTokens,
  zscorePerStepIndex,
} from '../../gpu/testing.ts'

const close = (actual: ArrayLike<number>, expected: readonly number[], tol = 1e-6) => {
  assert.equal(actual.length, expected.length, `length ${actual.length} vs ${expected.length}`)
  for (let i = 0; i < expected.length; i++)
    assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`)
}

describe('gpu/step-reward', () => {
  it('step reward - R_j = O + lambda * mean_l S_jl, unparseable judgements left out of the mean', () => {
    // O = 1, lambda = 0.5:
    //   step 0: [+1, +1, -1, +1] -> mean 0.5 -> 1 + 0.25 = 1.25
    //   step 1: [-1, -1, 0, 0]   -> mean -1 (two parse) -> 1 - 0.5 = 0.5
    //   step 2: [0, 0]           -> nothing parses, mean 0 -> 1
    const r = computeIntegratedStepRewards(
      1,
      [
        [1, 1, -1, 1],
        [-1, -1, 0, 0],
        [0, 0],
      ],
      0.5,
    )
    close(r, [1.25, 0.5, 1], 0)
    // lambda = 0: every step gets the outcome
    close(computeIntegratedStepRewards(-1, [[1, 1], [-1]], 0), [-1, -1], 0)
    assert.equal(meanJudgement([]), 0)
  })

  it('step reward - bad judgements, outcome and lambda are ConfigErrors', () => {
    assert.throws(() => computeIntegratedStepRewards(1, [[2]], 1), ConfigError)
    assert.throws(() => computeIntegratedStepRewards(Number.NaN, [[1]], 1), ConfigError)
    assert.throws(() => computeIntegratedStepRewards(1, [[1]], -0.1), /lambda=-0.1: must be >= 0/)
  })

  it('z-score - per step index across rollouts, unbiased std; one rollout or zero std gives 0', () => {
    // step 0: [3, 1, -1] -> mean 1, unbiased std sqrt((4+0+4)/2) = 2 -> [1, 0, -1]
    // step 1: [0.5, 0.5] -> zero std -> [0, 0]
    // step 2: [7] only rollout 1 reached it -> 0
    const a = zscorePerStepIndex([[3, 0.5], [1, 0.5, 7], [-1]])
    close(a[0]!, [2 / (2 + 1e-6), 0])
    close(a[1]!, [0, 0, 0], 0)
    close(a[2]!, [-2 / (2 + 1e-6)])
    // a group of one rollout: everything 0
    close(zscorePerStepIndex([[5, -3]])[0]!, [0, 0], 0)
    assert.deepEqual(zscorePerStepIndex([]), [])
    assert.throws(() => zscorePerStepIndex([[1, Number.POSITIVE_INFINITY]]), ConfigError)
  })

  it('token advantages - each step advantage covers its own trained tokens only', () => {
    // 12 tokens: prompt 0..2, turn 0 at 3 (trained 3,4,5; tool result 6,7), turn 1 at 8 (trained 8,9,11)
    const mask = Uint8Array.from([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1])
    const t = stepAdvantagesToTokens([0.5, -2], Int32Array.from([3, 8]), mask)
    close(t, [0, 0, 0, 0.5, 0.5, 0.5, 0, 0, -2, -2, 0, -2], 0)
    assert.throws(() => stepAdvantagesToTokens([1], [3, 8], mask), ShapeError)
    assert.throws(() => stepAdvantagesToTokens([1, 2], [8, 3], mask), /strictly increasing/)
    assert.throws(() => stepAdvantagesToTokens([1], [12], mask), ShapeError)
  })

  it('group step advantages - outcome plus judgements, z-scored, spread to tokens and padded', () => {
    // lambda 1. Rollout 0: O=1, one step judged [+1, +1] -> R 2. Rollout 1: O=0, steps [-1, -1] and [+1, -1]
    // -> R [-1, 0]. Step 0 values [2, -1]: mean 0.5, unbiased std sqrt(4.5) -> +-1.5/sqrt(4.5).
    const g = computeGroupStepAdvantages(
      [
        { outcome: 1, judgements: [[1, 1]], turnStarts: [2], lossMask: [0, 0, 1, 1] },
        {
          outcome: 0,
          judgements: [
            [-1, -1],
            [1, -1],
          ],
          turnStarts: [1, 3],
          lossMask: [0, 1, 0, 1, 1],
        },
      ],
      1,
    )
    close(g.rewards[0]!, [2], 0)
    close(g.rewards[1]!, [-1, 0], 0)
    const a = 1.5 / (Math.sqrt(4.5) + 1e-6)
    close(g.stepAdvantages[0]!, [a])
    close(g.stepAdvantages[1]!, [-a, 0])
    close(g.tokenAdvantages[0]!, [0, 0, a, a])
    close(g.tokenAdvantages[1]!, [0, -a, 0, 0, 0])
    close(padTokenAdvantages(g.tokenAdvantages, 5), [0, 0, a, a, 0, 0, -a, 0, 0, 0])
    assert.throws(() => padTokenAdvantages(g.tokenAdvantages, 4), ShapeError)
    assert.throws(
      () => computeGroupStepAdvantages([{ outcome: 1, judgements: [], turnStarts: [0], lossMask: [1] }], 1),
      ShapeError,
    )
  })
})
