import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { codeExpert } from './code-expert.ts'
import { CODE_MAX_DIFFICULTY, type CodeInstance, generateCode } from './code-instance.ts'
import { type CodeRunner, defaultCodeRunner, defaultCodeRunnerWhere } from './code-runner.ts'
import { submitTool } from './submit-tool.ts'

/**
 * `code`: small computations too long to do by hand, solved by running Python in the sandbox
 * (`sandboxes/`); tools `run_python(code)` and `submit(answer)`. Difficulty (1..4) is the problem
 * family: digit sums of powers, prime counts, Fibonacci numbers modulo m, Collatz chain lengths.
 */

/** Text of a sandbox response for the policy: stdout, or the error's last lines. */
function runText(r: Awaited<ReturnType<CodeRunner['runPython']>>): {
  text: string
  ok: boolean
  stdout: string
} {
  const run = r.run_result
  const stdout = run?.stdout ?? ''
  if (r.status === 'Success') return { text: stdout.trim().slice(0, 400) || '(no output)', ok: true, stdout }
  if (run?.status === 'TimeLimitExceeded') return { text: 'error: time limit exceeded', ok: false, stdout }
  const err = (run?.stderr || r.message || r.status).trim().split('\n').slice(-1)[0]!
  return { text: `error: ${err.slice(0, 400)}`, ok: false, stdout }
}

/** Settings of the code task. */
export interface CodeTaskOptions {
  /** Where programs run; `defaultCodeRunner()` on first use when absent. */
  runner?: CodeRunner
  /** Wall-clock limit of one run, seconds. Default 5. */
  runTimeoutS?: number
}

/** Makes a `code` task (the registry's `code` uses the defaults). */
export function createCodeTask(
  options: CodeTaskOptions = {},
): Task<CodeInstance> & { runner(): Promise<CodeRunner>; close(): Promise<void> } {
  let runner: Promise<CodeRunner> | undefined = options.runner ? Promise.resolve(options.runner) : undefined
  const getRunner = () => {
    // A start that failed (the sandbox was down) is not kept: the next call tries again.
    runner ??= defaultCodeRunner().catch((err: unknown) => {
      runner = undefined
      throw err
    })
    return runner
  }
  return {
    name: 'code',
    description: 'small computations solved by running Python in the sandbox',
    tools: [
      {
        type: 'function',
        function: {
          name: 'run_python',
          description: 'Run a Python program; returns its output',
          parameters: {
            type: 'object',
            properties: { code: { type: 'string' } },
            required: ['code'],
            additionalProperties: false,
          },
        },
      },
      submitTool(['string', 'number']),
    ],
    limits: { maxTurns: 8, maxContextBytes: 8192, maxInvalidActions: 2 },
    difficulty: { min: 1, max: CODE_MAX_DIFFICULTY, default: 1 },
    generate: generateCode,
    key: (i) => i.question,
    runner: getRunner,
    // The check opens a runner of its own (and closes it): the task's own starts on first use.
    sandbox: {
      where: () => options.runner?.where ?? defaultCodeRunnerWhere(),
      open: async () => {
        const given = options.runner
        return given
          ? { where: given.where, runPython: (c, t) => given.runPython(c, t), close: async () => undefined }
          : defaultCodeRunner()
      },
    },
    async close() {
      const r = runner
      runner = undefined
      if (r && !options.runner) await (await r).close()
    },
    open(instance): TaskEpisode {
      return {
        messages: [
          { role: 'system', content: 'Solve it by running Python. Plan briefly before each call.' },
          { role: 'user', content: instance.question },
        ],
        async call(name, args): Promise<ToolOutcome> {
          if (name === 'submit') {
            const success = String(args.answer).trim() === instance.answer
            return { content: success ? 'correct' : 'wrong', good: success, done: true, success }
          }
          const r = runText(
            await (await getRunner()).runPython(args.code as string, options.runTimeoutS ?? 5),
          )
          return { content: r.text, good: r.ok && r.stdout.trim() === instance.answer, toolError: !r.ok }
        },
      }
    },
    expert: (instance: CodeInstance, o: ExpertOptions): Policy => codeExpert(instance, o),
  }
}

/** The `code` task with default settings. */
export const code = createCodeTask()
