import { stat } from 'node:fs/promises'
import { extname, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { TaskFileError } from './errors.ts'
import type { AnyTask } from './task.ts'

/**
 * Loading a task from its own file, to try it (`triad env try mytasks/echo.ts`) before it is
 * registered in `tasks.ts`.
 */

/** File name endings `isTaskFilePath` takes for a file. */
const MODULE_EXTENSIONS = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']

const isObject = (v: unknown) => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'

/** The fields of a task (`Task` in `task.ts`), each with a check of its type. */
const TASK_FIELDS: Readonly<Record<string, (v: unknown) => boolean>> = {
  name: (v) => typeof v === 'string' && v.length > 0,
  description: (v) => typeof v === 'string',
  tools: Array.isArray,
  limits: isObject,
  difficulty: isObject,
  generate: isFunction,
  key: isFunction,
  open: isFunction,
  expert: isFunction,
}

/** The task fields a value lacks or has of the wrong type (none: it has the shape of a task). */
export function missingTaskFields(value: unknown): string[] {
  if (!isObject(value)) return Object.keys(TASK_FIELDS)
  const v = value as Record<string, unknown>
  return Object.entries(TASK_FIELDS)
    .filter(([field, ok]) => !ok(v[field]))
    .map(([field]) => field)
}

/** Whether a value has the shape of a task: every field of `Task`, of the right type. */
export function isTask(value: unknown): value is AnyTask {
  return missingTaskFields(value).length === 0
}

/** True when a `triad env try` argument is a file (a module extension or a path separator), not a task name. */
export function isTaskFilePath(arg: string): boolean {
  return MODULE_EXTENSIONS.includes(extname(arg)) || arg.includes('/') || arg.includes(sep)
}

/**
 * Loads the task of a module file: its default export when that is a task, else its only exported
 * task. TypeScript files need the tsx loaders, which the `triad` command registers.
 * @throws TaskFileError when the file is missing or not a file, fails to import, exports no task
 *   (the message lists the fields a task needs, and those its default export lacks), or exports
 *   several tasks and none as the default (the message names them).
 */
export async function loadTaskFile(file: string): Promise<AnyTask> {
  const abs = resolve(file)
  const info = await stat(abs).catch(() => undefined)
  if (!info) throw new TaskFileError(file, 'no such file')
  if (!info.isFile()) throw new TaskFileError(file, 'not a file')
  let mod: Record<string, unknown>
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>
  } catch (err) {
    throw new TaskFileError(
      file,
      `importing it failed: ${err instanceof Error ? err.message : String(err)}`,
      err,
    )
  }
  if (isTask(mod.default)) return mod.default
  // A CommonJS module (a file outside a `"type": "module"` package) has its exports in `default`.
  const exported = [...Object.values(mod), ...(isObject(mod.default) ? Object.values(mod.default!) : [])]
  const found = [...new Set(exported.filter(isTask))]
  if (found.length === 1) return found[0]!
  if (found.length > 1)
    throw new TaskFileError(
      file,
      `it exports several tasks (${found.map((t) => t.name).join(', ')}); make the one to try the default export`,
    )
  const lacks =
    mod.default === undefined
      ? ''
      : ` (its default export lacks: ${missingTaskFields(mod.default).join(', ')})`
  throw new TaskFileError(
    file,
    `it exports no task${lacks}; a task is an object with ${Object.keys(TASK_FIELDS).join(', ')} (actors/environment/task.ts)`,
  )
}
