import type { z } from 'zod'
import { RecipeFieldError } from './errors.ts'
import { RecipeSchema } from './recipe-schema.ts'

/** One key of a field path: an object field or an array index. */
export type FieldKey = string | number

/** The schema inside wrappers (default, prefault, optional, a transform's input). */
export function unwrapSchema(t: z.ZodType): z.ZodType {
  let cur = t
  for (;;) {
    const def = cur.def as unknown as { type: string; innerType?: z.ZodType; in?: z.ZodType } // cast: zod 4 types `def` per schema kind; only the fields read here are named
    if (def.innerType) cur = def.innerType
    else if (def.type === 'pipe' && def.in) cur = def.in
    else return cur
  }
}

/**
 * Every field path a recipe schema has, read from the schema itself (so a renamed or new field is
 * known at once): objects and leaves alike (`rl`, `rl.offPolicy`, `rl.offPolicy.name`), the
 * elements of an array as `[]` (`tasks[].weight`). In schema order.
 */
export function recipeFieldPaths(schema: z.ZodType = RecipeSchema): string[] {
  const out: string[] = []
  const walk = (s: z.ZodType, prefix: string) => {
    const def = unwrapSchema(s).def as unknown as {
      // cast: zod 4 types `def` per schema kind; only the fields read here are named
      type: string
      shape?: Record<string, z.ZodType>
      element?: z.ZodType
    }
    if (def.type === 'object' && def.shape)
      for (const [key, field] of Object.entries(def.shape)) {
        const path = prefix ? `${prefix}.${key}` : key
        out.push(path)
        walk(field, path)
      }
    else if (def.type === 'array' && def.element) walk(def.element, `${prefix}[]`)
  }
  walk(schema, '')
  return out
}

/**
 * The keys of a field path: `tasks[1].difficulty.start` is `['tasks', 1, 'difficulty', 'start']`.
 * @throws RecipeFieldError for a path that is not `name(.name|[index])*`.
 */
export function parseFieldPath(path: string): FieldKey[] {
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$/.test(path))
    throw new RecipeFieldError(path, 'is not a field path (write it as rl.eps_high or tasks[0].weight)')
  const keys: FieldKey[] = []
  for (const m of path.matchAll(/([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]/g))
    keys.push(m[1] !== undefined ? m[1] : Number(m[2]))
  return keys
}

/** The schema form of a path: array indices as `[]` (`tasks[1].weight` is `tasks[].weight`). */
export const schemaPathOf = (path: string) => path.replace(/\[\d+\]/g, '[]')

/**
 * Levenshtein distance (insertions, deletions and substitutions of one character; Levenshtein,
 * "Binary codes capable of correcting deletions, insertions, and reversals", 1966), by the
 * two-row dynamic programme.
 */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)) // d[i][j] = min(del, ins, sub)
    prev = cur
  }
  return prev[b.length]!
}

/**
 * Checks that a field path names a field of the recipe schema (and, for an array element, one
 * the recipe has: `tasks[2]` of a recipe with two tasks does not exist).
 * @param recipe the recipe as written (`recipeInput`), for the lengths of its arrays.
 * @returns the path's keys.
 * @throws RecipeFieldError naming the path, with the nearest field paths by edit distance and the
 *   fields of the object it points into.
 */
export function checkFieldPath(path: string, recipe?: unknown, schema: z.ZodType = RecipeSchema): FieldKey[] {
  const keys = parseFieldPath(path)
  const paths = recipeFieldPaths(schema)
  const pattern = schemaPathOf(path)
  if (!paths.includes(pattern)) {
    const nearest = paths
      .map((p) => ({ p, d: editDistance(pattern, p) }))
      .sort((x, y) => x.d - y.d)
      .slice(0, 3)
      .map((x) => x.p)
    const parent = pattern.includes('.') ? pattern.slice(0, pattern.lastIndexOf('.')) : ''
    const siblings = paths
      .filter(
        (p) =>
          p.startsWith(parent ? `${parent}.` : '') && !p.slice(parent ? parent.length + 1 : 0).match(/[.[]/),
      )
      .map((p) => p.slice(parent ? parent.length + 1 : 0))
    const where =
      paths.includes(parent) || parent === ''
        ? `; the fields of ${parent || 'a recipe'}: ${siblings.join(', ')}`
        : ''
    throw new RecipeFieldError(path, `is not a recipe field; nearest: ${nearest.join(', ')}${where}`)
  }
  let cur: unknown = recipe
  for (const [i, key] of keys.entries()) {
    if (typeof key === 'number') {
      const length = Array.isArray(cur) ? cur.length : 0
      if (key >= length)
        throw new RecipeFieldError(
          path,
          `is out of range: ${keys.slice(0, i).join('.')} has ${length} element${length === 1 ? '' : 's'} (indices 0..${length - 1})`,
        )
    }
    cur = cur && typeof cur === 'object' ? (cur as Record<FieldKey, unknown>)[key] : undefined
  }
  return keys
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** `over` merged into `base`: objects field by field, anything else replaced. */
function merged(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return structuredClone(over)
  const out: Record<string, unknown> = structuredClone(base)
  for (const [k, v] of Object.entries(over)) out[k] = merged(out[k], v)
  return out
}

/**
 * The field paths a value set at `field` changes: the field itself, or, for an object value
 * (merged into the field's object by `withField`), the path of each leaf it gives
 * (`triad` with `{"stepReward": {"enabled": false}}` changes `triad.stepReward.enabled`).
 */
export function changedPaths(field: string, value: unknown): string[] {
  if (!isPlainObject(value) || Object.keys(value).length === 0) return [field]
  return Object.entries(value).flatMap(([k, v]) => changedPaths(`${field}.${k}`, v))
}

/**
 * A deep copy of `value` with the field at `keys` set to `field` (objects on the way that are
 * missing are made). An object `field` is merged into an object already there, field by field
 * (its other fields are kept): `triad={"stepReward":{"enabled":false},"trainRewardModel":false}`
 * changes those two fields of `triad` and no other.
 */
export function withField(value: unknown, keys: readonly FieldKey[], field: unknown): unknown {
  const root: unknown = structuredClone(value ?? {})
  let cur = root as Record<FieldKey, unknown>
  for (const [i, key] of keys.entries()) {
    if (i === keys.length - 1) cur[key] = merged(cur[key], field)
    else {
      const next = cur[key]
      if (next === null || typeof next !== 'object') cur[key] = typeof keys[i + 1] === 'number' ? [] : {}
      cur = cur[key] as Record<FieldKey, unknown>
    }
  }
  return root
}
