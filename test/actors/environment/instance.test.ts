import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  checkHeldOut,
  DifficultyError,
  getTask,
  InstanceError,
  resolveInstance,
  splitOfKey,
  type Task,
  TaskRng,
  tasks,
} from '../../../actors/environment/index.ts'
import { counterTask } from './fixtures.ts'

/** The counter task with three instances only, whose keys all hash to the train split. */
const threeTrainKeys: Task<{ target: number; nonce: number }> = {
  ...counterTask,
  name: 'three',
  generate: (rng) => ({ target: 3, nonce: rng.pick([0, 1, 2]) }),
  key: (i) => ['red', 'green', 'blue'][i.nonce]!,
}

describe('actors/environment/instance', () => {
  it('instance - the same index, split and difficulty give the same instance', () => {
    const a = resolveInstance(tasks.calc!, { index: 4, difficulty: 2 }, new TaskRng(1))
    const b = resolveInstance(tasks.calc!, { index: 4, difficulty: 2 }, new TaskRng(2))
    assert.deepEqual(a, b)
  })

  it('instance - train and eval instances never share content', () => {
    for (const name of ['calc', 'code', 'maze', 'sql']) {
      const task = getTask(name)
      const train = new Set<string>()
      for (let i = 0; i < 150; i++) {
        const r = resolveInstance(task, { index: i, difficulty: 1 }, new TaskRng(0))
        assert.equal(splitOfKey(r.key), 'train')
        train.add(r.key)
      }
      for (let i = 0; i < 50; i++) {
        const r = resolveInstance(task, { index: i, difficulty: 1, split: 'eval' }, new TaskRng(0))
        assert.equal(r.split, 'eval')
        assert.ok(!train.has(r.key), `${name}: eval instance ${i} also in train`)
      }
    }
  })

  it('instance - a difficulty outside the levels is a DifficultyError with the range', () => {
    assert.throws(
      () => resolveInstance(tasks.maze!, { difficulty: 9 }, new TaskRng(0)),
      (e: unknown) =>
        e instanceof DifficultyError && e.message === "difficulty 9 is outside 1..7 for task 'maze'",
    )
  })

  it('instance - a task whose keys all hash to train has no eval instance, and the error says why', () => {
    assert.deepEqual(
      ['red', 'green', 'blue'].map(splitOfKey),
      ['train', 'train', 'train'],
      'the fixture needs keys that all hash to train',
    )
    const expected =
      "task 'three': no eval instance at difficulty 1 in 1000 draws (3 distinct keys, all train): " +
      'the split of an instance is chosen by hashing its key() (about 20% of distinct keys are eval, the rest train), so the task needs more distinct keys'
    assert.throws(
      () => resolveInstance(threeTrainKeys, { index: 0, split: 'eval' }, new TaskRng(0)),
      (e: unknown) => e instanceof InstanceError && e.task === 'three' && e.message === expected,
    )
    assert.throws(
      () => checkHeldOut(threeTrainKeys, 1, 16),
      (e: unknown) => e instanceof InstanceError && e.message === expected,
    )
    assert.equal(resolveInstance(threeTrainKeys, { index: 0 }, new TaskRng(0)).split, 'train')
  })

  it('instance - checkHeldOut passes for the built-in tasks and checks the level', () => {
    for (const task of Object.values(tasks)) checkHeldOut(task, task.difficulty.default, 16)
    assert.throws(
      () => checkHeldOut(tasks.calc!, 0, 1),
      (e: unknown) =>
        e instanceof DifficultyError && e.message === "difficulty 0 is outside 1..7 for task 'calc'",
    )
  })

  it('instance - an unknown task name lists the valid names', () => {
    assert.throws(() => getTask('chess'), /unknown task 'chess'; valid tasks: calc, code, maze, sql/)
  })
})
