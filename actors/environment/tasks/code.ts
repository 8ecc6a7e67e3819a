import type { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { codeExpert } from './code-expert.ts'
import { type CodeRunner, defaultCodeRunner, defaultCodeRunnerWhere } from './code-runner.ts'
import { submitTool } from './submit-tool.ts'

/**
 * `code`: small computations too long to do by hand, solved by running Python in the sandbox
 * (`sandboxes/`); tools `run_python(code)` and `submit(answer)`. Difficulty (1..4) is the problem
 * family: digit sums of powers, prime counts, Fibonacci numbers modulo m, Collatz chain lengths.
 */

/** Problem families, by difficulty. Closed set. */
export const CodeFamily = {
  DigitSum: 'digit_sum',
  Primes: 'primes',
  Fibonacci: 'fibonacci',
  Collatz: 'collatz',
} as const
export type CodeFamily = (typeof CodeFamily)[keyof typeof CodeFamily]
const FAMILIES: readonly CodeFamily[] = ['digit_sum', 'primes', 'fibonacci', 'collatz']

/** A code instance: the question, its answer and a program that prints it. */
export interface CodeInstance {
  family: CodeFamily
  question: string
  answer: string
  /** A correct Python program (the expert's). */
  program: string
}

/** Number of primes below n (sieve). */
function primesBelow(n: number): number {
  const s = new Uint8Array(n).fill(1)
  let c = 0
  for (let i = 2; i < n; i++) {
    if (!s[i]) continue
    c++
    for (let j = i * i; j < n; j += i) s[j] = 0
  }
  return c
}

/** Generates a code instance. */
export function generateCode(rng: TaskRng, difficulty: number): CodeInstance {
  const family = FAMILIES[difficulty - 1]!
  if (family === 'digit_sum') {
    const b = rng.int(3, 9)
    const k = rng.int(40, 300)
    const answer = String([...(BigInt(b) ** BigInt(k)).toString()].reduce((a, d) => a + Number(d), 0))
    return {
      family,
      question: `Digit sum of ${b}**${k}?`,
      answer,
      program: `print(sum(map(int,str(${b}**${k}))))`,
    }
  }
  if (family === 'primes') {
    const n = rng.int(20, 500) * 100
    return {
      family,
      question: `How many primes are below ${n}?`,
      answer: String(primesBelow(n)),
      program: `n=${n}\ns=[1]*n\ns[0]=s[1]=0\nfor i in range(2,int(n**.5)+1):\n if s[i]:s[i*i::i]=[0]*len(s[i*i::i])\nprint(sum(s))`,
    }
  }
  if (family === 'fibonacci') {
    const n = rng.int(1000, 90000)
    const m = rng.pick([1000, 9973, 65521, 1000003])
    let a = 0
    let b = 1
    for (let i = 0; i < n; i++) [a, b] = [b, (a + b) % m]
    return {
      family,
      question: `F(${n}) mod ${m}, with F(1)=F(2)=1?`,
      answer: String(a),
      program: `a,b=0,1\nfor _ in range(${n}):a,b=b,(a+b)%${m}\nprint(a)`,
    }
  }
  const n = rng.int(1000, 999999)
  let x = n
  let c = 0
  while (x !== 1) {
    x = x % 2 === 0 ? x / 2 : 3 * x + 1
    c++
  }
  return {
    family,
    question: `Collatz steps from ${n} to 1?`,
    answer: String(c),
    program: `n=${n};c=0\nwhile n!=1:\n n=n//2 if n%2==0 else 3*n+1;c+=1\nprint(c)`,
  }
}

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
    difficulty: { min: 1, max: FAMILIES.length, default: 1 },
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
