import { DuplicateTaskError, UnknownTaskError } from './errors.ts'
import type { AnyTask } from './task.ts'

/** A read-only set of tasks keyed by name. */
export type TaskRegistry = Readonly<Record<string, AnyTask>>

/** Builds a registry from tasks. @throws DuplicateTaskError when two tasks share a name. */
export function taskRegistry(list: readonly AnyTask[]): TaskRegistry {
  const out: Record<string, AnyTask> = {}
  for (const t of list) {
    if (out[t.name]) throw new DuplicateTaskError(t.name)
    out[t.name] = t
  }
  return Object.freeze(out)
}

/** Looks a task up by name. @throws UnknownTaskError listing the valid names. */
export function lookupTask(registry: TaskRegistry, name: string): AnyTask {
  const task = Object.hasOwn(registry, name) ? registry[name] : undefined
  if (!task) throw new UnknownTaskError(name, Object.keys(registry).sort())
  return task
}
