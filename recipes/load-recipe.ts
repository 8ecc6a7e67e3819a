import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isRecipe, recipeInput } from './define-recipe.ts'
import { RecipeError, type RecipeIssue, RecipeLoadError } from './errors.ts'
import { type ResolvedRecipe, resolveRecipe, resolveTasks, type TaskCatalog } from './task-catalog.ts'

/**
 * The issues of a RecipeError, also one thrown by another copy of this module, and the value it
 * validated when it carries one; else undefined.
 */
function recipeErrorOf(err: unknown): { issues: readonly RecipeIssue[]; value?: unknown } | undefined {
  const e = err as { name?: unknown; issues?: unknown }
  if (!(err instanceof RecipeError || (e && typeof e === 'object' && e.name === 'RecipeError')))
    return undefined
  if (!Array.isArray(e.issues)) return undefined
  const value = (err as { value?: unknown }).value
  return value === undefined ? { issues: e.issues } : { issues: e.issues, value }
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
 *   RecipeError (with `file` set) naming every bad field, failed check across fields, unknown
 *   task and level outside its task's range, all at once (`resolveRecipe`).
 */
export async function loadRecipe(file: string, options: LoadRecipeOptions = {}): Promise<ResolvedRecipe> {
  return (await loadRecipeSource(file, options)).recipe
}

/**
 * `loadRecipe`, with the value the recipe was written as (`recipeInput`: the object given to
 * `defineRecipe`, or the plain object the module exports; defaults not filled in), for callers that
 * change fields of it and resolve it again (`triad ablate`).
 * @throws as `loadRecipe`.
 */
export async function loadRecipeSource(
  file: string,
  options: LoadRecipeOptions = {},
): Promise<{ recipe: ResolvedRecipe; input: unknown }> {
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
    const invalid = recipeErrorOf(err)
    if (invalid) {
      // `defineRecipe` knew no catalog: the value it refused is checked again with it, so the
      // unknown tasks and levels come in the same list as the bad fields.
      if ('value' in invalid) resolveRecipeIn(file, invalid.value, options.catalog, err)
      throw new RecipeError(invalid.issues, { file, cause: err })
    }
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
  // `isRecipe` is false for a recipe built by another copy of `defineRecipe`: it is parsed again
  // (its `derived` block is recomputed).
  if (isRecipe(mod.default)) {
    try {
      return { recipe: resolveTasks(mod.default, options.catalog), input: recipeInput(mod.default) }
    } catch (err) {
      if (err instanceof RecipeError) throw new RecipeError(err.issues, { file, cause: err })
      throw err
    }
  }
  const recipe = resolveRecipeIn(file, mod.default, options.catalog)
  // A recipe of another copy of defineRecipe carries its input too; a plain object is its own.
  const input = (typeof mod.default === 'object' && mod.default && recipeInput(mod.default)) ?? mod.default
  return { recipe, input: structuredClone(input) }
}

/**
 * `resolveRecipe` of the value a recipe file gave.
 * @throws RecipeError with `file` set, listing every problem.
 */
function resolveRecipeIn(
  file: string,
  value: unknown,
  catalog?: TaskCatalog,
  cause?: unknown,
): ResolvedRecipe {
  try {
    return resolveRecipe(value, catalog)
  } catch (err) {
    if (err instanceof RecipeError) throw new RecipeError(err.issues, { file, cause: cause ?? err })
    throw err
  }
}
