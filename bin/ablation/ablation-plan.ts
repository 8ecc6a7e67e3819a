import { isDeepStrictEqual } from 'node:util'
import {
  changedPaths,
  checkFieldPath,
  type FieldKey,
  formatIssues,
  parseFieldPath,
  RecipeError,
  type ResolvedRecipe,
  resolveRecipe,
  type TaskCatalog,
  withField,
} from '../../recipes/index.ts'
import { heldOutSettings } from '../run/periodic-evaluation.ts'
import { AblationInputError } from './errors.ts'

/** One `--vary FIELD=V1,V2` option: a recipe field and the values to try it at. */
export interface VarySpec {
  field: string
  values: unknown[]
}

/**
 * Fields whose change makes another cold start: the policy's SFT reads the tasks, the model, the
 * `sft` settings and the seed (its data and initial weights); the reward model's cold start also
 * reads `triad.rewardModelSft`. A variant that varies a field at or under one of these gets its own
 * SFT; every other variant starts RL from the baseline's SFT checkpoint of the same seed.
 */
export const SFT_FIELDS = ['seed', 'tasks', 'model', 'sft', 'triad.rewardModelSft'] as const

/** True when a varied field path touches the cold start (`SFT_FIELDS`). */
export function touchesSft(field: string): boolean {
  return SFT_FIELDS.some((f) => field === f || field.startsWith(`${f}.`) || field.startsWith(`${f}[`))
}

/** The id of the variant that is the recipe as it is. */
export const BASELINE = 'baseline'

/** One variant of an ablation: the recipe as is (the baseline) or with one field changed. */
export interface AblationVariant {
  /** `baseline`, or `FIELD=VALUE` with the value as JSON (`rl.eps_high=0.2`). */
  id: string
  /** The stem of its run directories' names, a NATS token (`baseline`, `v1-rl_eps_high-0_2`). */
  slug: string
  /** The varied field and its value (absent for the baseline). */
  field?: string
  value?: unknown
  /** The SFT it starts RL from: the slug of the variant whose cold start it shares (`baseline`, or its own). */
  sftGroup: string
}

/** What `triad ablate` will run: each variant at each seed. */
export interface AblationPlan {
  /** The recipe as written (defaults not filled in), the base of every variant. */
  input: unknown
  /** The baseline, resolved. */
  base: ResolvedRecipe
  /** The baseline first, then each varied value, one field at a time. */
  variants: AblationVariant[]
  /** The recipe's `seed` plus 0, 1, ... `--seeds - 1`. */
  seeds: number[]
  /** Values that give the baseline's recipe again, left out, each with a line why. */
  skipped: string[]
}

/**
 * A value of `--vary`: JSON when it parses as JSON (`0.2`, `true`, `"x"`, `{"name":"tis"}`), else
 * the text as a string (`token-mean`). Text that starts as JSON (`{`, `[` or `"`) must be JSON.
 * @throws AblationInputError `<text> is not JSON (<the parser's reason>)` for such text that does not parse.
 */
export function parseVaryValue(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    if (/^[[{"]/.test(text))
      throw new AblationInputError(`${text} is not JSON (${(err as Error).message})`, { cause: err })
    return text
  }
}

/**
 * Parses one `--vary FIELD=V1,V2,...` (commas inside brackets, braces or quotes do not split).
 * @throws AblationInputError for a missing `=`, field or value, a value that starts as JSON (`{`,
 *   `[` or `"`) but does not parse as JSON (with the parser's reason), and a number that is not
 *   finite (`1e400`).
 */
export function parseVary(arg: string): VarySpec {
  const eq = arg.indexOf('=')
  if (eq <= 0) throw new AblationInputError(`--vary ${arg}: write it as FIELD=V1,V2 (rl.eps_high=0.2,0.28)`)
  const field = arg.slice(0, eq).trim()
  const values: string[] = []
  let depth = 0
  let quoted = false
  let cur = ''
  for (const ch of arg.slice(eq + 1)) {
    if (ch === '"') quoted = !quoted
    else if (!quoted && (ch === '[' || ch === '{')) depth++
    else if (!quoted && (ch === ']' || ch === '}')) depth--
    if (ch === ',' && depth === 0 && !quoted) {
      values.push(cur)
      cur = ''
    } else cur += ch
  }
  values.push(cur)
  if (values.some((v) => v.trim() === ''))
    throw new AblationInputError(`--vary ${arg}: an empty value (write FIELD=V1,V2 with no empty item)`)
  const parsed = values.map((v) => {
    try {
      return parseVaryValue(v.trim())
    } catch (err) {
      if (err instanceof AblationInputError)
        throw new AblationInputError(`--vary ${arg}: ${err.message}`, { cause: err })
      throw err
    }
  })
  parsed.forEach((v, i) => {
    if (typeof v === 'number' && !Number.isFinite(v))
      throw new AblationInputError(`--vary ${arg}: ${values[i]!.trim()} is not a finite number`)
  })
  return { field, values: parsed }
}

/** `rl.eps_high=0.2` as a NATS token: every other character as `_`, `=` as `-` (`rl_eps_high-0_2`). */
const slugOf = (field: string, value: unknown) =>
  `${field}-${JSON.stringify(value)}`
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .replace(/_+/g, '_')
    .slice(0, 48)

/** The recipe input of `variant` at `seed`: the varied field set, and the seed. */
export function variantInput(
  plan: Pick<AblationPlan, 'input'>,
  variant: AblationVariant,
  seed: number,
): unknown {
  const input =
    variant.field === undefined ? plan.input : withField(plan.input, keysOf(variant.field), variant.value)
  return withField(input, ['seed'], seed)
}

// The field was checked against the recipe when planned (`checkFieldPath` with the input).
const keysOf = (field: string): FieldKey[] => parseFieldPath(field)

/**
 * Resolves a recipe input (`resolveRecipe`), for a variant.
 * @throws AblationInputError with the recipe's problems on one line, naming the option.
 */
function resolveVariant(input: unknown, catalog: TaskCatalog, what: string): ResolvedRecipe {
  try {
    return resolveRecipe(input, catalog)
  } catch (err) {
    if (err instanceof RecipeError)
      throw new AblationInputError(`${what}: ${formatIssues(err.issues).replaceAll('\n', '; ')}`, {
        cause: err,
      })
    throw err
  }
}

/** The resolved recipe of a variant at a seed. */
export function variantRecipe(
  plan: Pick<AblationPlan, 'input'>,
  variant: AblationVariant,
  seed: number,
  catalog: TaskCatalog,
): ResolvedRecipe {
  const what = variant.field === undefined ? 'the recipe' : `--vary ${variant.id}`
  return resolveVariant(variantInput(plan, variant, seed), catalog, what)
}

/**
 * Plans an ablation: the baseline (the recipe as is) and, one field at a time, each value of each
 * `--vary` (several `--vary` options are not combined into a grid: each variant differs from the
 * baseline in one field, which is what a claim about one setting needs), each run at `seeds`
 * seeds. Every variant is checked before anything runs. A value that gives the baseline's recipe
 * again is left out (`skipped` says so).
 * @param input the recipe as written (`loadRecipeSource`).
 * @throws RecipeFieldError for a field the recipe schema does not have (with the nearest ones);
 *   AblationInputError for a value the schema refuses (its problems on one line), for `seed`
 *   (the seeds are `--seeds`), for `name` (a label: nothing to compare), for a field that changes the held-out evaluation (its tasks,
 *   levels, k or instances: the variants would not be compared on the same instances), for a
 *   field given twice, a value given twice (`0.2,0.20`), values that are all the recipe's own
 *   (nothing to compare), and fewer than one seed.
 */
export function planAblation(
  input: unknown,
  varies: readonly VarySpec[],
  seeds: number,
  catalog: TaskCatalog,
): AblationPlan {
  if (!Number.isInteger(seeds) || seeds < 1)
    throw new AblationInputError(`--seeds ${seeds}: needs at least one seed`)
  const base = resolveVariant(input, catalog, 'the recipe')
  const plan: AblationPlan = {
    input,
    base,
    variants: [{ id: BASELINE, slug: BASELINE, sftGroup: BASELINE }],
    seeds: Array.from({ length: seeds }, (_, j) => base.seed + j),
    skipped: [],
  }
  /** The `--vary` ids whose value is the recipe's own. */
  const own: string[] = []
  // What makes the held-out instances and their sampling seeds (turn length and temperature may vary).
  const instancesOf = (r: ResolvedRecipe) => {
    const { tasks, k, instances, seed } = heldOutSettings(r)
    return { tasks, k, instances, seed }
  }
  const heldOut = instancesOf(base)
  const seen = new Set<string>()
  for (const spec of varies) {
    checkFieldPath(spec.field, input)
    if (seen.has(spec.field))
      throw new AblationInputError(`--vary ${spec.field} is given twice: list its values once (FIELD=V1,V2)`)
    seen.add(spec.field)
    if (spec.field === 'seed')
      throw new AblationInputError(
        "--vary seed: the seeds of an ablation are --seeds N (the recipe's seed, +1, ...)",
      )
    if (spec.field === 'name')
      throw new AblationInputError(
        '--vary name: the run name is a label and changes nothing that is trained or measured (the runs are named for their variants)',
      )
    for (const value of spec.values) {
      const id = `${spec.field}=${JSON.stringify(value)}`
      if (plan.variants.some((v) => v.id === id))
        throw new AblationInputError(
          `--vary ${spec.field}: the value ${JSON.stringify(value)} is given twice (list each value once)`,
        )
      const variant: AblationVariant = {
        id,
        slug: `v${plan.variants.length}-${slugOf(spec.field, value)}`,
        field: spec.field,
        value,
        sftGroup: BASELINE,
      }
      if (changedPaths(spec.field, value).some(touchesSft)) variant.sftGroup = variant.slug
      const recipe = variantRecipe(plan, variant, base.seed, catalog)
      if (!isDeepStrictEqual(instancesOf(recipe), heldOut))
        throw new AblationInputError(
          `--vary ${id}: it changes the held-out instances (the tasks, their starting levels, k or instances per task), so the variants would not be compared on the same instances`,
        )
      const { derived: _a, ...r } = recipe
      const { derived: _b, ...b } = base
      if (isDeepStrictEqual(r, b)) {
        plan.skipped.push(`--vary ${id} is the recipe's own value: the baseline stands for it`)
        own.push(id)
        continue
      }
      plan.variants.push(variant)
    }
  }
  if (plan.variants.length === 1)
    throw new AblationInputError(
      `every --vary value is the recipe's own (${own.join(', ')}): nothing to compare with the baseline`,
    )
  return plan
}
