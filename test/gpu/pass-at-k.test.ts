import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError } from '../../gpu/errors.ts'
import { avgAtK, passAtK, passAtKOver } from '../../gpu/pass-at-k.ts'

/** Fraction of the k-subsets of n samples (the first c successes) that hold a success, by enumeration. */
function bruteForce(n: number, c: number, k: number): number {
  let hit = 0
  let total = 0
  for (let bits = 0; bits < 1 << n; bits++) {
    let size = 0
    for (let b = bits; b; b &= b - 1) size++
    if (size !== k) continue
    total++
    if (bits & ((1 << c) - 1)) hit++
  }
  return hit / total
}

describe('gpu/pass-at-k', () => {
  it('pass@k - equals brute-force enumeration for every n <= 10, c, k (tol 1e-12)', () => {
    for (let n = 1; n <= 10; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          const got = passAtK(n, c, k)
          const want = bruteForce(n, c, k)
          assert.ok(Math.abs(got - want) < 1e-12, `n ${n} c ${c} k ${k}: ${got} vs ${want}`)
        }
      }
    }
  })

  it('pass@k - hand values: pass@1 is c / n; no success gives 0', () => {
    assert.equal(passAtK(4, 1, 1), 0.25)
    assert.ok(Math.abs(passAtK(4, 1, 2) - 0.5) < 1e-15) // 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert.equal(passAtK(5, 0, 3), 0)
  })

  it('pass@k - the mean over instances with its standard error', () => {
    // per-instance pass@1: 0.5, 1, 0 -> mean 0.5, sample std 0.5, stderr 0.5 / sqrt(3)
    const est = passAtKOver(
      [
        { n: 2, c: 1 },
        { n: 2, c: 2 },
        { n: 2, c: 0 },
      ],
      1,
    )
    assert.equal(est.mean, 0.5)
    assert.ok(Math.abs(est.stderr - 0.5 / Math.sqrt(3)) < 1e-15)
    assert.equal(est.instances, 3)
  })

  it('avg@k - mean success per instance, then over instances, with standard error', () => {
    const est = avgAtK([
      [true, false],
      [1, 1],
      [0, 0],
    ])
    assert.equal(est.mean, 0.5)
    assert.ok(Math.abs(est.stderr - 0.5 / Math.sqrt(3)) < 1e-15)
    assert.deepEqual(avgAtK([[1, 0, 0, 1]]), { mean: 0.5, stderr: 0, instances: 1 })
  })

  it('pass@k - bad counts are rejected with the argument named', () => {
    const arg = (name: string) => (e: unknown) => e instanceof ConfigError && e.field === name
    assert.throws(() => passAtK(3, 1, 4), arg('k'))
    assert.throws(() => passAtK(3, 4, 1), arg('c'))
    assert.throws(() => passAtK(0, 0, 1), arg('n'))
    assert.throws(() => passAtK(3, 1, 1.5), arg('k'))
    assert.throws(() => avgAtK([]), arg('instances'))
    assert.throws(() => avgAtK([[1], []]), arg('successes[1]'))
  })
})
