import { type AnyTask, getTask } from '../actors/index.ts'
import { UsageError } from './errors.ts'

/** `--tasks name[:level],...` of `triad eval` and `triad collect`. */

/** A task of the command line and its level (undefined: the task's default level). */
export interface TaskLevel {
  name: string
  difficulty: number | undefined
}

/**
 * A task level checked against the task's levels.
 * @throws UsageError naming where the level came from (`--tasks calc:9`, `--difficulty`).
 */
export function checkLevel(task: AnyTask, level: number, where: string): number {
  const { min, max } = task.difficulty
  if (level < min || level > max)
    throw new UsageError(
      `${where}: difficulty ${level} is invalid: task '${task.name}' has levels ${min}..${max}`,
    )
  return level
}

/**
 * `--tasks` parsed and checked: each entry `name` or `name:level`; an entry without a level gets
 * `difficulty` (undefined: the task's default level).
 * @throws CliError for an unknown task (listing the valid ones), a level that is not an integer,
 *   and a level outside the task's levels.
 */
export function parseTasks(list: string, difficulty: number | undefined): TaskLevel[] {
  return list.split(',').map((entry) => {
    const [name = '', level] = entry.trim().split(':')
    let task: AnyTask
    try {
      task = getTask(name)
    } catch (err) {
      throw new UsageError((err as Error).message, { cause: err })
    }
    if (level !== undefined) {
      if (!/^\d+$/.test(level))
        throw new UsageError(
          `--tasks ${entry.trim()}: the level after ':' must be an integer, got '${level}'`,
        )
      return { name, difficulty: checkLevel(task, Number(level), `--tasks ${entry.trim()}`) }
    }
    if (difficulty === undefined) return { name, difficulty: undefined }
    return { name, difficulty: checkLevel(task, difficulty, `--difficulty ${difficulty}`) }
  })
}
