import { describeError, oneLine } from './error-text.ts'
import { SandboxCheckError } from './errors.ts'
import type { TaskRegistry } from './registry.ts'
import type { AnyTask } from './task.ts'
import { tasks as builtinTasks } from './tasks.ts'

/** The program of the start check and what it must print. */
const CHECK_PROGRAM = 'print(6 * 7)'
const CHECK_STDOUT = '42'
/** Wall-clock limit of the check program, s. */
const CHECK_TIMEOUT_S = 10
/**
 * The start check of every task that declares a code sandbox (`Task.sandbox`): a real program
 * (`print(6 * 7)`) through a runner opened as the task's episodes open theirs (the HTTP sandbox of
 * `TRIAD_SANDBOX_URL`, SandboxFusion's `/run_code`, or the backend in this process), which must
 * answer `Success` with `42` on stdout. Tasks that share a sandbox are checked once per place.
 * docs/design.md#sandboxes: a wrong sandbox URL must not fail silently while training goes on
 * without tools, so `triad run`, `triad env try` and `triad eval` call this before they start.
 * @throws SandboxCheckError (one line: the task, the sandbox's URL or backend, what answered) for
 *   the first task whose sandbox does not answer as it should.
 */
export async function checkTaskSandboxes(tasks: readonly AnyTask[]): Promise<void> {
  const checked = new Set<string>()
  for (const task of tasks) {
    const need = task.sandbox
    if (!need) continue
    const where = need.where()
    if (checked.has(where)) continue
    let runner: Awaited<ReturnType<typeof need.open>>
    try {
      runner = await need.open()
    } catch (err) {
      throw new SandboxCheckError(task.name, where, oneLine(describeError(err)), {
        cause: err,
      })
    }
    try {
      let r: Awaited<ReturnType<typeof runner.runPython>>
      try {
        r = await runner.runPython(CHECK_PROGRAM, CHECK_TIMEOUT_S)
      } catch (err) {
        throw new SandboxCheckError(task.name, runner.where, oneLine(describeError(err)), {
          cause: err,
        })
      }
      const stdout = r.run_result?.stdout ?? ''
      if (r.status !== 'Success' || stdout.trim() !== CHECK_STDOUT) {
        const said = r.run_result?.stderr || r.message || ''
        throw new SandboxCheckError(
          task.name,
          runner.where,
          oneLine(
            `it answered status ${r.status} with stdout ${JSON.stringify(stdout.slice(0, 80))}${said ? `: ${said}` : ''}`,
          ),
        )
      }
      checked.add(where)
    } finally {
      await runner.close()
    }
  }
}

/**
 * `checkTaskSandboxes` of the tasks named `names` in `registry` (default the built-in tasks); a
 * name the registry does not hold is skipped (the recipe's own check reports it).
 * @throws SandboxCheckError as `checkTaskSandboxes`.
 */
export function checkSandboxesOf(
  names: readonly string[],
  registry: TaskRegistry = builtinTasks,
): Promise<void> {
  const found = names.flatMap((n) => (Object.hasOwn(registry, n) ? [registry[n]!] : []))
  return checkTaskSandboxes(found)
}
