import * as actors from '../actors/index.ts'
import type { Recipe } from './define-recipe.ts'
import { RecipeError, type RecipeIssue } from './errors.ts'

/** What a recipe needs to know of one task: its name and integer difficulty levels. */
export interface TaskInfo {
  name: string
  difficulty: { min: number; max: number; default: number }
  /**
   * Checks that the task makes the `count` held-out instances an evaluation at `difficulty` plays
   * (absent: not checked).
   * @throws Error saying why it cannot (`InstanceError` for the built-in catalog).
   */
  checkHeldOut?(difficulty: number, count: number): void
}

/** The tasks a recipe may name, by name. */
export type TaskCatalog = Readonly<Record<string, TaskInfo>>

/** A task of a resolved recipe: its difficulty levels are all known. */
export type ResolvedTask = Omit<Recipe['tasks'][number], 'difficulty'> & {
  difficulty: { start: number; min: number; max: number }
}

/** A recipe checked against the task catalog: every task exists and its levels are filled in. */
export type ResolvedRecipe = Omit<Recipe, 'tasks'> & { tasks: readonly ResolvedTask[] }

/**
 * A task registry as a catalog: each task's levels, and its held-out check (`checkHeldOut` of
 * `actors/environment`).
 */
export function taskCatalogOf(registry: actors.TaskRegistry): TaskCatalog {
  const out: Record<string, TaskInfo> = {}
  for (const [name, task] of Object.entries(registry))
    out[name] = {
      name,
      difficulty: { ...task.difficulty },
      checkHeldOut: (difficulty, count) => actors.checkHeldOut(task, difficulty, count),
    }
  return Object.freeze(out)
}

/**
 * The built-in task registry (`tasks` of `actors/environment`) as a catalog. Every built-in task
 * lives there, so this is the list `triad run` checks recipes against.
 */
export function builtinTaskCatalog(): TaskCatalog {
  return taskCatalogOf(actors.tasks)
}

/**
 * Checks the recipe's tasks against a catalog and fills in missing difficulty levels: `min` and
 * `max` from the task's range, `start` from its default. Each task whose catalog entry can check it
 * must make the `evaluation.instancesPerTask` held-out instances that every evaluation (the final
 * one included) plays at its `start` level. Without a catalog, names are not checked and missing
 * levels become `min = 1`, `start = min`, `max = start` (a fixed difficulty).
 * @throws RecipeError naming each unknown task (with the valid names), each level outside the
 *   task's range, and each task without enough held-out instances (with why).
 */
export function resolveTasks(recipe: Recipe, catalog?: TaskCatalog): ResolvedRecipe {
  const issues: RecipeIssue[] = []
  const valid = catalog ? Object.keys(catalog).sort() : []
  const tasks = recipe.tasks.map((t, i): ResolvedTask => {
    const d = t.difficulty
    const info = catalog && Object.hasOwn(catalog, t.name) ? catalog[t.name] : undefined
    if (catalog && !info) {
      issues.push({
        path: `tasks[${i}].name`,
        message: `unknown task '${t.name}'; valid tasks: ${valid.join(', ') || '(none)'}`,
      })
      return { ...t, difficulty: { start: 0, min: 0, max: 0 } }
    }
    if (info) {
      const range = info.difficulty
      for (const key of ['start', 'min', 'max'] as const) {
        const v = d[key]
        if (v === undefined) continue
        if (v < range.min)
          issues.push({
            path: `tasks[${i}].difficulty.${key}`,
            message: `${v} is below ${t.name}'s lowest level (${range.min})`,
          })
        if (v > range.max)
          issues.push({
            path: `tasks[${i}].difficulty.${key}`,
            message: `${v} is above ${t.name}'s highest level (${range.max})`,
          })
      }
      const min = d.min ?? range.min
      const max = d.max ?? range.max
      const start = d.start ?? Math.min(Math.max(range.default, min), max)
      if (start < min || start > max)
        issues.push({
          path: `tasks[${i}].difficulty.start`,
          message: `${start} is outside difficulty [${min}, ${max}]`,
        })
      else if (start >= range.min && start <= range.max && info.checkHeldOut) {
        const count = recipe.evaluation.instancesPerTask
        try {
          info.checkHeldOut(start, count)
        } catch (err) {
          issues.push({
            path: `tasks[${i}]`,
            message: `the evaluation needs ${count} held-out (eval) instances at difficulty ${start}: ${(err as Error)?.message ?? String(err)}`,
          })
        }
      }
      return { ...t, difficulty: { start, min, max } }
    }
    const min = d.min ?? Math.min(1, d.start ?? 1, d.max ?? 1)
    const start = d.start ?? min
    const max = d.max ?? start
    return { ...t, difficulty: { start, min, max } }
  })
  if (issues.length) throw new RecipeError(issues)
  return Object.freeze({ ...recipe, tasks: Object.freeze(tasks.map((t) => Object.freeze(t))) })
}
