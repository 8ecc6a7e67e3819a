import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isRecipe, parseStoredRecipe } from './define-recipe.ts'
import { RecipeError, type RecipeIssue, RecipeLoadError } from './errors.ts'
import { type ResolvedRecipe, resolveTasks, type TaskCatalog } from './task-catalog.ts'

/** The issues of a RecipeError, also one thrown by another copy of this module; else undefined. */
function recipeIssuesOf(err: unknown): readonly RecipeIssue[] | undefined {
  if (err instanceof RecipeError) return err.issues
  const e = err as { name?: unknown; issues?: unknown }
  if (e && typeof e === 'object' && e.name === 'RecipeError' && Array.isArray(e.issues))
    return e.issues as RecipeIssue[]
  return undefined
}

/** Options of `loadRecipe`. */
export interface LoadRecipeOptions {
  /** Tasks the recipe may name (default: none checked; `triad run` passes the built-in registry). */
  catalog?: TaskCatalog
}

/**
 * Loads a recipe file: a TypeScript (or JavaScript) module whose default export is
 * `defineRecipe({...})` (a plain object is validated too), then checks its tasks against the
 * catalog. TypeScript files need the tsx loaders, which the `triad` command registers (both, so a
 * recipe outside a `"type": "module"` package, which Node treats as CommonJS, loads too).
 * @throws RecipeLoadError when the file is missing, fails to import or has no default export (or
 *   is CommonJS in a process with only tsx's ES module loader: the message says what to do);
 *   RecipeError (with `file` set) naming every bad field and unknown task.
 */
export async function loadRecipe(file: string, options: LoadRecipeOptions = {}): Promise<ResolvedRecipe> {
  const abs = resolve(file)
  const info = await stat(abs).catch(() => undefined)
  if (!info) throw new RecipeLoadError(file, 'no such file')
  if (!info.isFile()) throw new RecipeLoadError(file, 'not a file')
  let mod: { default?: unknown }
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown }
  } catch (err) {
    // A recipe outside a `"type": "module"` package loads as CommonJS with its own copy of this
    // folder's modules, so its RecipeError is recognised by name and shape, not by class.
    const issues = recipeIssuesOf(err)
    if (issues) throw new RecipeError(issues, { file, cause: err })
    if ((err as { code?: unknown })?.code === 'ERR_REQUIRE_CYCLE_MODULE')
      throw new RecipeLoadError(
        file,
        'it is a CommonJS module (no package.json with "type": "module" above it), and this process loads TypeScript only as ES modules; ' +
          'run it with the triad command or `node --import tsx` (both load it), or put a package.json with {"type": "module"} beside it',
        err,
      )
    throw new RecipeLoadError(
      file,
      `importing it failed: ${err instanceof Error ? err.message : String(err)}`,
      err,
    )
  }
  if (mod.default === undefined)
    throw new RecipeLoadError(
      file,
      'it has no default export; end it with `export default defineRecipe({...})`',
    )
  try {
    // `isRecipe` is false for a recipe built by another copy of `defineRecipe`: it is parsed again
    // (its `derived` block is recomputed).
    const recipe = isRecipe(mod.default) ? mod.default : parseStoredRecipe(mod.default)
    return resolveTasks(recipe, options.catalog)
  } catch (err) {
    if (err instanceof RecipeError) throw new RecipeError(err.issues, { file, cause: err })
    throw err
  }
}
