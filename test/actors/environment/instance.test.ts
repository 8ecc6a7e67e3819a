import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  DifficultyError,
  getTask,
  Rng,
  resolveInstance,
  splitOfKey,
  tasks,
} from '../../../actors/environment/index.ts'

describe('actors/environment/instance', () => {
  it('instance - the same index, split and difficulty give the same instance', () => {
    const a = resolveInstance(tasks.calc!, { index: 4, difficulty: 2 }, new Rng(1))
    const b = resolveInstance(tasks.calc!, { index: 4, difficulty: 2 }, new Rng(2))
    assert.deepEqual(a, b)
  })

  it('instance - train and eval instances never share content', () => {
    for (const name of ['calc', 'code', 'maze', 'sql']) {
      const task = getTask(name)
      const train = new Set<string>()
      for (let i = 0; i < 150; i++) {
        const r = resolveInstance(task, { index: i, difficulty: 1 }, new Rng(0))
        assert.equal(splitOfKey(r.key), 'train')
        train.add(r.key)
      }
      for (let i = 0; i < 50; i++) {
        const r = resolveInstance(task, { index: i, difficulty: 1, split: 'eval' }, new Rng(0))
        assert.equal(r.split, 'eval')
        assert.ok(!train.has(r.key), `${name}: eval instance ${i} also in train`)
      }
    }
  })

  it('instance - a difficulty outside the levels is a DifficultyError with the range', () => {
    assert.throws(
      () => resolveInstance(tasks.maze!, { difficulty: 9 }, new Rng(0)),
      (e: unknown) =>
        e instanceof DifficultyError && e.message === "difficulty 9 is outside 1..7 for task 'maze'",
    )
  })

  it('instance - an unknown task name lists the valid names', () => {
    assert.throws(() => getTask('chess'), /unknown task 'chess'; valid tasks: calc, code, maze, sql/)
  })
})
