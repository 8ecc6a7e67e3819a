import { lookupTask, taskRegistry } from './registry.ts'
import type { AnyTask } from './task.ts'
import { calc } from './tasks/calc.ts'
import { code } from './tasks/code.ts'
import { maze } from './tasks/maze.ts'
import { sql } from './tasks/sql.ts'

/** The built-in tasks by name: `calc`, `code`, `maze`, `sql`. */
export const tasks = taskRegistry([calc, code, maze, sql])

/** A built-in task by name. @throws UnknownTaskError listing the valid names. */
export function getTask(name: string): AnyTask {
  return lookupTask(tasks, name)
}
