import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { crossedMean, EvaluationStatsError } from '../../../actors/evaluation/index.ts'
import { avgAtK } from '../../../gpu/index.ts'

describe('actors/evaluation/crossed-mean', () => {
  it('crossed-mean - a hand-worked 2 seeds x 4 instances table: mean 7/16, se^2 = (MS_seed + MS_inst - MS_err) / 8 = 17/256', () => {
    // seed means 5/8 and 1/4, instance means 3/4, 1/4, 0, 3/4, grand mean 7/16:
    // MS_seed = 4 ((3/16)^2 + (3/16)^2) / 1 = 9/32; MS_inst = 2 (25 + 9 + 49 + 25) / 256 / 3 = 9/32;
    // residuals x - a_s - b_i + m = ±(1, 1, -3, 1)/16, MS_err = 2 * 12/256 / 3 = 1/32;
    // se^2 = (9/32 + 9/32 - 1/32) / 8 = 17/256.
    const e = crossedMean([
      [1, 0.5, 0, 1],
      [0.5, 0, 0, 0.5],
    ])
    assert.equal(e.mean, 7 / 16)
    assert.ok(Math.abs(e.stderr - Math.sqrt(17) / 16) < 1e-12, String(e.stderr))
    assert.equal(e.seeds, 2)
    assert.equal(e.instances, 4)
  })

  it('crossed-mean - pure interaction (no seed or instance effect) is bounded below by MS_err / (S I): se 1/2, not 0', () => {
    // MS_seed = MS_inst = 0, MS_err = 1: the unbiased estimate (0 + 0 - 1) / 4 is negative.
    const e = crossedMean([
      [1, 0],
      [0, 1],
    ])
    assert.equal(e.mean, 0.5)
    assert.equal(e.stderr, 0.5)
  })

  it('crossed-mean - one seed: the standard error over instances, as avgAtK', () => {
    // sd^2 = ((1/2)^2 + 0 + (1/2)^2) / 2 = 1/4, se = sqrt(1/4 / 3) = 1 / (2 sqrt 3)
    const e = crossedMean([[1, 0.5, 0]])
    assert.equal(e.mean, 0.5)
    assert.ok(Math.abs(e.stderr - 1 / (2 * Math.sqrt(3))) < 1e-12)
    assert.ok(
      Math.abs(
        e.stderr -
          avgAtK([
            [1, 1],
            [1, 0],
            [0, 0],
          ]).stderr,
      ) < 1e-12,
    )
  })

  it('crossed-mean - one instance: the standard error over seeds; one cell: 0', () => {
    const e = crossedMean([[1], [0], [0.5]])
    assert.equal(e.mean, 0.5)
    assert.ok(Math.abs(e.stderr - 1 / (2 * Math.sqrt(3))) < 1e-12)
    assert.deepEqual(crossedMean([[0.25]]), { mean: 0.25, stderr: 0, seeds: 1, instances: 1 })
  })

  it('crossed-mean - bad input: an empty table, and seeds evaluated on different instances', () => {
    assert.throws(() => crossedMean([]), {
      name: 'EvaluationStatsError',
      message: 'a mean needs at least one seed and one instance',
    })
    assert.throws(
      () => crossedMean([[1, 0], [1]]),
      (err: Error) => {
        assert.ok(err instanceof EvaluationStatsError)
        assert.equal(
          err.message,
          'seed row 1 has 1 instances, row 0 has 2: every seed must be evaluated on the same instances',
        )
        return true
      },
    )
  })
})
