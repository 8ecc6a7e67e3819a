import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type AblationRun, ablationTable } from '../../../bin/ablation/index.ts'

/** A done run whose instance i of each task had `successes[task][i]` of k 4. */
const run = (variant: string, seed: number, successes: Record<string, number[]>): AblationRun => ({
  variant,
  seed,
  status: 'done',
  dir: `runs/${variant}-s${seed}`,
  step: 9,
  instances: Object.entries(successes).flatMap(([task, s]) =>
    s.map((c, index) => ({ task, difficulty: 1, index, k: 4, successes: c })),
  ),
})

const near = (a: number | null, b: number) => assert.ok(a !== null && Math.abs(a - b) < 1e-12, `${a} vs ${b}`)

describe('bin/ablation/ablation-table', () => {
  it('ablation-table - hand-worked: avg@k and the paired difference over seeds and instances, per task and for the mean', () => {
    // baseline avg: seed 1 calc (0, 1/2, 1/4, 1/2), seed 2 calc (1/4, 1/2, 1/4, 0)
    // variant  avg: seed 1 calc (1, 1, 1/4, 1),     seed 2 calc (3/4, 1/2, 1/4, 1/2)
    // differences: [[1, 1/2, 0, 1/2], [1/2, 0, 0, 1/2]]: crossedMean gives mean 7/16... see below
    const runs = [
      run('baseline', 1, { calc: [0, 2, 1, 2], maze: [0, 0, 0, 0] }),
      run('baseline', 2, { calc: [1, 2, 1, 0], maze: [0, 0, 0, 0] }),
      run('v', 1, { calc: [4, 4, 1, 4], maze: [0, 0, 0, 0] }),
      run('v', 2, { calc: [3, 2, 1, 2], maze: [0, 0, 0, 0] }),
      { variant: 'w', seed: 1, status: 'failed', dir: 'runs/w-s1', reason: 'exit 1: triad: boom' },
    ] satisfies AblationRun[]
    const rows = ablationTable(['calc', 'maze'], ['baseline', 'v', 'w'], runs)
    const cell = (variant: string, task: string) =>
      rows.find((r) => r.variant === variant && r.task === task)!
    // d = [[1, 1/2, 0, 1/2], [1/2, 0, 0, 1/2]]: the table of test/actors/evaluation/crossed-mean.test.ts
    // with rows swapped in part; by hand: seed means 1/2 and 1/4, instance means 3/4, 1/4, 0, 1/2,
    // grand mean 3/8; MS_seed = 4 (2 (1/8)^2) = 1/8; MS_inst = 2 (9 + 1 + 9 + 1)/64 / 3 = 5/24;
    // residuals (1/8)(1, 1, -1, -1) and their negatives: MS_err = 8/64 / 3 = 1/24;
    // se^2 = (1/8 + 5/24 - 1/24) / 8 = 7/192.
    const v = cell('v', 'calc')
    near(v.diff, 3 / 8)
    near(v.diff_se, Math.sqrt(7 / 192))
    assert.deepEqual([v.seeds, v.n, v.paired_seeds], [2, 4, 2])
    // avg@k of v on calc: [[1, 1, 1/4, 1], [3/4, 1/2, 1/4, 1/2]], mean 21/32
    near(v.avg_at_k, 21 / 32)
    // maze is 0 everywhere: the mean over tasks halves calc's per instance, so its difference halves too.
    near(cell('v', 'maze').diff, 0)
    near(cell('v', 'mean').diff, 3 / 16)
    near(cell('v', 'mean').diff_se, Math.sqrt(7 / 192) / 2)
    // The baseline has no difference to itself; a variant with no result has no numbers and no seeds.
    assert.equal(cell('baseline', 'mean').diff, null)
    assert.deepEqual(
      [cell('w', 'mean').seeds, cell('w', 'mean').avg_at_k, cell('w', 'mean').diff],
      [0, null, null],
    )
  })

  it("ablation-table - a seed without a baseline result is left out of the paired difference, not of the variant's avg@k", () => {
    const rows = ablationTable(
      ['calc'],
      ['baseline', 'v'],
      [run('baseline', 1, { calc: [0, 4] }), run('v', 1, { calc: [4, 4] }), run('v', 2, { calc: [0, 0] })],
    )
    const v = rows.find((r) => r.variant === 'v' && r.task === 'calc')!
    assert.deepEqual([v.seeds, v.paired_seeds], [2, 1])
    near(v.avg_at_k, 0.5)
    near(v.diff, 0.5) // seed 1 only: (1 - 0, 1 - 1)
  })
})
