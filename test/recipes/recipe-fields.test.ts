import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  checkFieldPath,
  editDistance,
  parseFieldPath,
  RecipeFieldError,
  recipeFieldPaths,
  withField,
} from '../../recipes/index.ts'

describe('recipes/recipe-fields', () => {
  it('recipe-fields - every field path of the schema, objects and leaves, array elements as []', () => {
    const paths = recipeFieldPaths()
    for (const p of [
      'seed',
      'rl',
      'rl.eps_high',
      'rl.offPolicy.name',
      'tasks[].difficulty.start',
      'pipeline.stalenessBound',
    ])
      assert.ok(paths.includes(p), p)
    assert.ok(!paths.includes('derived'))
  })

  it('recipe-fields - edit distance: hand-worked', () => {
    assert.equal(editDistance('kitten', 'sitting'), 3)
    assert.equal(editDistance('rl.eps_hgh', 'rl.eps_high'), 1)
    assert.equal(editDistance('', 'abc'), 3)
  })

  it("recipe-fields - paths parse to keys; an index past the recipe's array and a malformed path are named", () => {
    assert.deepEqual(parseFieldPath('tasks[1].difficulty.start'), ['tasks', 1, 'difficulty', 'start'])
    assert.deepEqual(checkFieldPath('tasks[0].weight', { tasks: [{ name: 'calc' }] }), ['tasks', 0, 'weight'])
    assert.throws(() => checkFieldPath('tasks[2].weight', { tasks: [{ name: 'calc' }] }), {
      name: 'RecipeFieldError',
      message: 'tasks[2].weight is out of range: tasks has 1 element (indices 0..0)',
    })
    assert.throws(
      () => parseFieldPath('rl..eps'),
      (err: Error) => {
        assert.ok(err instanceof RecipeFieldError)
        assert.equal(err.message, 'rl..eps is not a field path (write it as rl.eps_high or tasks[0].weight)')
        return true
      },
    )
    // An empty or blank path is quoted, so the message still shows what was given.
    assert.throws(() => parseFieldPath(' '), {
      message: '" " is not a field path (write it as rl.eps_high or tasks[0].weight)',
    })
    assert.throws(() => parseFieldPath(''), {
      message: '"" is not a field path (write it as rl.eps_high or tasks[0].weight)',
    })
  })

  it('recipe-fields - an unknown field: the nearest paths and the fields of the object it points into', () => {
    assert.throws(() => checkFieldPath('rl.offPolicy.nam'), {
      message:
        'rl.offPolicy.nam is not a recipe field; nearest: rl.offPolicy.name, rl.offPolicy.cap, rl.offPolicy.low; the fields of rl.offPolicy: name, cap, low, high, level',
    })
  })

  it('recipe-fields - withField sets a copy, making missing objects, leaving the value as it was', () => {
    const input = { tasks: [{ name: 'calc' }] }
    assert.deepEqual(withField(input, ['rl', 'kl', 'beta'], 0.1), {
      tasks: [{ name: 'calc' }],
      rl: { kl: { beta: 0.1 } },
    })
    assert.deepEqual(withField(input, ['tasks', 0, 'weight'], 2), { tasks: [{ name: 'calc', weight: 2 }] })
    assert.deepEqual(input, { tasks: [{ name: 'calc' }] })
  })
})
