import * as actors from '../actors/index.ts'
import { checkStoredRecipe, pathsOverlap, type Recipe } from './define-recipe.ts'
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

/** A problem `checkTasks` found, with every field its check read. */
export interface TaskIssue extends RecipeIssue {
  /** The paths of the fields the check read (`path` or fields inside it among them). */
  involves: string[]
}

/** What `checkTasks` found: the problems of the tasks, and the recipe with their levels filled in. */
export interface TasksCheck {
  issues: TaskIssue[]
  recipe: ResolvedRecipe
}

/**
 * Checks the recipe's tasks against a catalog and fills in missing difficulty levels: `min` and
 * `max` from the task's range, `start` from its default. Each task whose catalog entry can check it
 * must make the `evaluation.instancesPerTask` held-out instances that every evaluation (the final
 * one included) plays at its `start` level. Without a catalog, names are not checked and missing
 * levels become `min = 1`, `start = min`, `max = start` (a fixed difficulty). Each unknown task,
 * level outside the task's range and task without enough held-out instances is one issue; a field
 * gets one issue at most. Throws nothing.
 */
export function checkTasks(recipe: Recipe, catalog?: TaskCatalog): TasksCheck {
  const issues: TaskIssue[] = []
  /** One issue per field: a second one about the same field says the same in other words. */
  const add = (path: string, message: string, involves: string[] = [path]) => {
    if (!issues.some((i) => i.path === path)) issues.push({ path, message, involves })
  }
  const valid = catalog ? Object.keys(catalog).sort() : []
  const tasks = recipe.tasks.map((t, i): ResolvedTask => {
    const d = t.difficulty
    // An agent or MCP task is no registry task: one fixed level, nothing to check here.
    if (t.agent !== undefined || t.mcp !== undefined)
      return { ...t, difficulty: { start: 1, min: 1, max: 1 } }
    const info = catalog && Object.hasOwn(catalog, t.name) ? catalog[t.name] : undefined
    if (catalog && !info) {
      add(`tasks[${i}].name`, `unknown task '${t.name}'; valid tasks: ${valid.join(', ') || '(none)'}`)
      return { ...t, difficulty: { start: 0, min: 0, max: 0 } }
    }
    if (info) {
      const range = info.difficulty
      for (const key of ['start', 'min', 'max'] as const) {
        const v = d[key]
        if (v === undefined) continue
        if (v < range.min)
          add(`tasks[${i}].difficulty.${key}`, `${v} is below ${t.name}'s lowest level (${range.min})`)
        if (v > range.max)
          add(`tasks[${i}].difficulty.${key}`, `${v} is above ${t.name}'s highest level (${range.max})`)
      }
      const min = d.min ?? range.min
      const max = d.max ?? range.max
      const start = d.start ?? Math.min(Math.max(range.default, min), max)
      if (start < min || start > max)
        add(`tasks[${i}].difficulty.start`, `${start} is outside difficulty [${min}, ${max}]`, [
          `tasks[${i}].difficulty`,
        ])
      else if (start >= range.min && start <= range.max && info.checkHeldOut) {
        const count = recipe.evaluation.instancesPerTask
        try {
          info.checkHeldOut(start, count)
        } catch (err) {
          add(
            `tasks[${i}]`,
            `the evaluation needs ${count} held-out (eval) instances at difficulty ${start}: ${(err as Error)?.message ?? String(err)}`,
            [`tasks[${i}].name`, `tasks[${i}].difficulty`, 'evaluation.instancesPerTask'],
          )
        }
      }
      return { ...t, difficulty: { start, min, max } }
    }
    const min = d.min ?? Math.min(1, d.start ?? 1, d.max ?? 1)
    const start = d.start ?? min
    const max = d.max ?? start
    return { ...t, difficulty: { start, min, max } }
  })
  return {
    issues,
    recipe: Object.freeze({ ...recipe, tasks: Object.freeze(tasks.map((t) => Object.freeze(t))) }),
  }
}

/**
 * `checkTasks`, throwing its problems.
 * @throws RecipeError naming each unknown task (with the valid names), each level outside the
 *   task's range, and each task without enough held-out instances (with why).
 */
export function resolveTasks(recipe: Recipe, catalog?: TaskCatalog): ResolvedRecipe {
  const { issues, recipe: resolved } = checkTasks(recipe, catalog)
  if (issues.length) throw new RecipeError(issues.map(({ path, message }) => ({ path, message })))
  return resolved
}

/**
 * Validates a value as a recipe (a recipe file's default export, or a stored `recipe.json`: its
 * `derived` block is recomputed) and checks its tasks against the catalog, reporting every problem
 * in one round: bad fields, checks across fields (`checkStoredRecipe`) and the catalog's
 * (`checkTasks`, run on the recipe with the bad fields at their defaults; a check that read a field
 * with a problem already is left out, so nothing is said twice).
 * @throws RecipeError listing them all, with `file` set when given.
 */
export function resolveRecipe(value: unknown, catalog?: TaskCatalog, file?: string): ResolvedRecipe {
  const check = checkStoredRecipe(value)
  const issues: RecipeIssue[] = [...check.issues]
  let resolved: ResolvedRecipe | undefined
  if (check.recipe) {
    const tasks = checkTasks(check.recipe, catalog)
    const known = [...issues]
    for (const t of tasks.issues)
      if (!t.involves.some((p) => known.some((i) => pathsOverlap(i.path, p))))
        issues.push({ path: t.path, message: t.message })
    resolved = tasks.recipe
  }
  if (issues.length || !resolved) throw new RecipeError(issues, { file, value })
  return resolved
}
