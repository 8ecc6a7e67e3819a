import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  builtinTaskCatalog,
  defineRecipe,
  RecipeError,
  resolveTasks,
  type TaskCatalog,
} from '../../recipes/index.ts'

const catalog: TaskCatalog = {
  calc: { name: 'calc', difficulty: { min: 1, max: 4, default: 2 } },
  maze: { name: 'maze', difficulty: { min: 1, max: 3, default: 1 } },
}

const messages = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof RecipeError)
    return err.issues.map((i) => `${i.path}: ${i.message}`)
  }
  assert.fail('accepted')
}

describe('recipes/task-catalog', () => {
  it('resolveTasks - fills missing difficulty levels from the task registry', () => {
    const r = resolveTasks(
      defineRecipe({ tasks: [{ name: 'calc' }, { name: 'maze', difficulty: { start: 3, min: 2 } }] }),
      catalog,
    )
    assert.deepEqual(
      r.tasks.map((t) => t.difficulty),
      [
        { start: 2, min: 1, max: 4 },
        { start: 3, min: 2, max: 3 },
      ],
    )
  })

  it('resolveTasks - an unknown task is an error listing the valid tasks', () => {
    const recipe = defineRecipe({ tasks: [{ name: 'calc' }, { name: 'chess' }] })
    assert.deepEqual(
      messages(() => resolveTasks(recipe, catalog)),
      ["tasks[1].name: unknown task 'chess'; valid tasks: calc, maze"],
    )
  })

  it('resolveTasks - a level outside the task range is an error', () => {
    const recipe = defineRecipe({
      tasks: [
        { name: 'maze', difficulty: { max: 7 } },
        { name: 'calc', difficulty: { min: 0 } },
      ],
    })
    assert.deepEqual(
      messages(() => resolveTasks(recipe, catalog)),
      [
        "tasks[0].difficulty.max: 7 is above maze's highest level (3)",
        "tasks[1].difficulty.min: 0 is below calc's lowest level (1)",
      ],
    )
  })

  it('resolveTasks - a task without enough held-out instances is an error naming the task and why', () => {
    const asked: [string, number, number][] = []
    const checking: TaskCatalog = {
      calc: { ...catalog.calc!, checkHeldOut: (d, n) => void asked.push(['calc', d, n]) },
      maze: {
        ...catalog.maze!,
        checkHeldOut: (d, n) => {
          asked.push(['maze', d, n])
          throw new Error("task 'maze': no eval instance at difficulty 3 in 1000 draws")
        },
      },
    }
    const recipe = defineRecipe({
      tasks: [{ name: 'calc' }, { name: 'maze', difficulty: { start: 3 } }],
      evaluation: { instancesPerTask: 5 },
    })
    assert.deepEqual(
      messages(() => resolveTasks(recipe, checking)),
      [
        "tasks[1]: the evaluation needs 5 held-out (eval) instances at difficulty 3: task 'maze': no eval instance at difficulty 3 in 1000 draws",
      ],
    )
    assert.deepEqual(asked, [
      ['calc', 2, 5],
      ['maze', 3, 5],
    ])
  })

  it('resolveTasks - without a registry, names pass and missing levels fix the difficulty', () => {
    const r = resolveTasks(
      defineRecipe({ tasks: [{ name: 'anything' }, { name: 'x', difficulty: { start: 3 } }] }),
    )
    assert.deepEqual(
      r.tasks.map((t) => t.difficulty),
      [
        { start: 1, min: 1, max: 1 },
        { start: 3, min: 1, max: 3 },
      ],
    )
  })

  it('builtinTaskCatalog - is the task registry of actors/environment', () => {
    const c = builtinTaskCatalog()
    assert.ok(c, 'actors/ exports the task registry')
    for (const name of ['calc', 'maze', 'sql']) assert.ok(name in c, `built-in task ${name}`)
    for (const [name, info] of Object.entries(c)) {
      assert.equal(info.name, name)
      assert.ok(
        info.difficulty.min <= info.difficulty.default && info.difficulty.default <= info.difficulty.max,
      )
      assert.equal(typeof info.checkHeldOut, 'function', `${name} checks its held-out split`)
      info.checkHeldOut!(info.difficulty.default, 16)
    }
  })
})
