import * as actors from '../actors/index.ts'
import type { Recipe } from './define-recipe.ts'
import { RecipeError, type RecipeIssue } from './errors.ts'

/** What a recipe needs to know of one task: its name and integer difficulty levels. */
export interface TaskInfo {
  name: string
  difficulty: { min: number; max: number; default: number }
}

/** The tasks a recipe may name, by name. */
export type TaskCatalog = Readonly<Record<string, TaskInfo>>

/** A task of a resolved recipe: its difficulty levels are all known. */
export type ResolvedTask = Omit<Recipe['tasks'][number], 'difficulty'> & {
  difficulty: { start: number; min: number; max: number }
}

/** A recipe checked against the task catalog: every task exists and its levels are filled in. */
export type ResolvedRecipe = Omit<Recipe, 'tasks'> & { tasks: readonly ResolvedTask[] }

function isTaskInfo(v: unknown): v is TaskInfo {
  const t = v as TaskInfo
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof t.name === 'string' &&
    typeof t.difficulty === 'object' &&
    t.difficulty !== null &&
    [t.difficulty.min, t.difficulty.max, t.difficulty.default].every(Number.isInteger)
  )
}

/**
 * The built-in task registry (`tasks` of `actors/environment`), as a catalog; `undefined` while
 * `actors/` exports no registry. Every built-in task lives there, so this is the list `triad run`
 * checks recipes against.
 */
export function builtinTaskCatalog(): TaskCatalog | undefined {
  const registry = (actors as unknown as Record<string, unknown>).tasks
  if (!registry || typeof registry !== 'object') return undefined
  const out: Record<string, TaskInfo> = {}
  for (const [name, task] of Object.entries(registry)) {
    if (!isTaskInfo(task)) return undefined
    out[name] = { name, difficulty: { ...task.difficulty } }
  }
  return Object.freeze(out)
}

/**
 * Checks the recipe's tasks against a catalog and fills in missing difficulty levels: `min` and
 * `max` from the task's range, `start` from its default. Without a catalog, names are not checked
 * and missing levels become `min = 1`, `start = min`, `max = start` (a fixed difficulty).
 * @throws RecipeError naming each unknown task (with the valid names) and each level outside the
 *   task's range.
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
