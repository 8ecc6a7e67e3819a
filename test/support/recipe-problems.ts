import assert from 'node:assert/strict'
import { parseRecipe, RecipeError } from '../../recipes/index.ts'

/** The issues of a recipe that must fail, as `path: message` lines (fails the test when it is accepted). */
export function recipeProblems(input: unknown): string[] {
  try {
    parseRecipe(input)
  } catch (err) {
    assert.ok(err instanceof RecipeError, `expected RecipeError, got ${err}`)
    return err.issues.map((i) => `${i.path}: ${i.message}`)
  }
  assert.fail('recipe was accepted')
}
