import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type EvaluationInstance,
  pairedDifference,
  pairedDifferenceLine,
} from '../../../actors/evaluation/index.ts'

/** Instances of one task at level 1, k 4, with these successes at indices 0, 1, 2... */
const of = (task: string, successes: number[]): EvaluationInstance[] =>
  successes.map((s, index) => ({ task, difficulty: 1, index, k: 4, successes: s }))

const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`)

describe('actors/evaluation/paired-difference', () => {
  it('paired-difference - hand-worked: per instance, then averaged, with its standard error; the mean over tasks per instance', () => {
    const sft = [...of('calc', [1, 2, 4]), ...of('maze', [0, 0, 2])]
    const step = [...of('calc', [3, 2, 4]), ...of('maze', [1, 0, 4])]
    const [calc, maze, mean] = pairedDifference(sft, step)
    // calc: d = (0.75 - 0.25, 0.5 - 0.5, 1 - 1) = (1/2, 0, 0): mean 1/6,
    // sd^2 = ((1/3)^2 + (1/6)^2 + (1/6)^2) / 2 = 1/12, se = sqrt(1/12 / 3) = 1/6
    assert.equal(calc!.task, 'calc')
    assert.equal(calc!.n, 3)
    near(calc!.avg_at_k_diff, 1 / 6)
    near(calc!.avg_at_k_diff_se, 1 / 6)
    // maze: d = (1/4, 0, 1/2): mean 1/4, sd^2 = 1/16, se = sqrt(1/48)
    near(maze!.avg_at_k_diff, 0.25)
    near(maze!.avg_at_k_diff_se, Math.sqrt(1 / 48))
    // mean: x_i = mean over tasks of d_i = (3/8, 0, 1/4): mean 5/24, deviations (4, -5, 1)/24,
    // sd^2 = 42/576 / 2 = 7/192, se = sqrt(7/192 / 3) = sqrt(7) / 24
    assert.deepEqual([mean!.task, mean!.difficulty, mean!.n], ['mean', 0, 3])
    near(mean!.avg_at_k_diff, 5 / 24)
    near(mean!.avg_at_k_diff_se, Math.sqrt(7) / 24)
    assert.equal(
      pairedDifferenceLine('step-9 - sft', 4, calc!),
      '  step-9 - sft calc: avg@4 +0.167 ± 0.167 (paired over 3 instances, 1.0 se)',
    )
  })

  it('paired-difference - the order of instances in the files does not matter: they pair by task, level and index', () => {
    const a = of('calc', [0, 4, 2])
    const b = of('calc', [4, 4, 2]).reverse()
    const [calc] = pairedDifference(a, b)
    near(calc!.avg_at_k_diff, 1 / 3)
  })

  it('paired-difference - bad input: other tasks, other instances, an instance twice', () => {
    assert.throws(() => pairedDifference(of('calc', [1]), of('maze', [1])), {
      name: 'EvaluationStatsError',
      message:
        'the evaluations are of different tasks (calc:1 vs maze:1): a paired difference needs the same tasks and instances',
    })
    assert.throws(() => pairedDifference(of('calc', [1, 2]), of('calc', [1, 2, 3])), {
      name: 'EvaluationStatsError',
      message:
        'paired difference: calc (difficulty 1) was not evaluated on the same instances (instance 2 is in only one): a paired difference needs the same instances',
    })
    assert.throws(() => pairedDifference([...of('calc', [1]), ...of('calc', [2])], of('calc', [1])), {
      name: 'EvaluationStatsError',
      message: 'instance 0 of calc (difficulty 1) is listed twice',
    })
  })
})
