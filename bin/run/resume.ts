import { RecipeError, type ResolvedRecipe, resolveRecipe, type TaskCatalog } from '../../recipes/index.ts'
import { RecipeMismatchError } from './errors.ts'

/** One setting that differs between a run's stored recipe and the recipe given to resume it. */
export interface RecipeDifference {
  path: string
  stored: unknown
  current: unknown
}

/** Fields a resumed run may change: only the budget (to run longer or shorter). */
const MAY_CHANGE = ['budget']

function diff(a: unknown, b: unknown, path: string, out: RecipeDifference[]): void {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    for (const k of [...keys].sort()) {
      const p = Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : k
      diff(a[k], b[k], p, out)
    }
  } else if (!Object.is(a, b)) out.push({ path, stored: a, current: b })
}

/** The settings (derived sizes excluded) where two recipes differ, as dotted paths. */
export function recipeDifferences(stored: ResolvedRecipe, current: ResolvedRecipe): RecipeDifference[] {
  const out: RecipeDifference[] = []
  const { derived: _a, ...s } = stored
  const { derived: _b, ...c } = current
  diff(s, c, '', out)
  return out
}

/**
 * The recipe a resumed run continues with: the run's stored `recipe.json`, with the budget of the
 * recipe given now. Any other difference is an error, so a resumed run never silently changes.
 * @throws RecipeError when the stored recipe does not validate (with `file` set);
 *   RecipeMismatchError listing each differing setting.
 */
export function resumeRecipe(
  storedJson: unknown,
  current: ResolvedRecipe,
  options: { file: string; catalog?: TaskCatalog },
): ResolvedRecipe {
  let stored: ResolvedRecipe
  try {
    stored = resolveRecipe(storedJson, options.catalog)
  } catch (err) {
    if (err instanceof RecipeError) throw new RecipeError(err.issues, { file: options.file, cause: err })
    throw err
  }
  const differences = recipeDifferences(stored, current).filter(
    (d) => !MAY_CHANGE.some((m) => d.path === m || d.path.startsWith(`${m}.`)),
  )
  if (differences.length) throw new RecipeMismatchError(options.file, differences)
  return Object.freeze({ ...stored, budget: current.budget })
}
