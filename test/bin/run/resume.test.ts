import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RecipeMismatchError, recipeDifferences, resumeRecipe } from '../../../bin/run/index.ts'
import { defineRecipe, RecipeError, resolveTasks } from '../../../recipes/index.ts'

const make = (extra: object = {}) =>
  resolveTasks(defineRecipe({ name: 'r', tasks: [{ name: 'calc' }], ...extra }))

describe('bin/run/resume', () => {
  it('recipeDifferences - lists the differing settings as paths', () => {
    assert.deepEqual(
      recipeDifferences(make(), make({ rl: { lr: 2e-4 }, tasks: [{ name: 'calc', weight: 2 }] })),
      [
        { path: 'rl.lr', stored: 1e-4, current: 2e-4 },
        { path: 'tasks[0].weight', stored: 1, current: 2 },
      ],
    )
    assert.deepEqual(recipeDifferences(make(), make()), [])
  })

  it('resumeRecipe - keeps the stored recipe and takes the new budget', () => {
    const stored = JSON.parse(JSON.stringify(make({ budget: { maxSteps: 10 } })))
    const r = resumeRecipe(stored, make({ budget: { maxSteps: 30 } }), { file: 'x/recipe.json' })
    assert.deepEqual(r.budget, { maxSteps: 30 })
    assert.equal(r.rl.lr, 1e-4)
  })

  it('resumeRecipe - any other change is an error naming each setting', () => {
    const stored = JSON.parse(JSON.stringify(make()))
    assert.throws(
      () => resumeRecipe(stored, make({ seed: 4 }), { file: 'runs/r-1/recipe.json' }),
      (err: Error) =>
        err instanceof RecipeMismatchError &&
        err.message ===
          'the recipe differs from runs/r-1/recipe.json, which the run was started with (only budget may change on resume):\nseed: 0 in the run, 4 now',
    )
  })

  it('resumeRecipe - a stored recipe that does not validate names the file', () => {
    assert.throws(
      () => resumeRecipe({ tasks: [] }, make(), { file: 'runs/r-1/recipe.json' }),
      (err: Error) =>
        err instanceof RecipeError &&
        err.file === 'runs/r-1/recipe.json' &&
        /tasks: needs at least 1/.test(err.message),
    )
  })
})
