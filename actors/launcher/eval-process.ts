import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { basename, dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { dieWithParent, OWN_PROCESS_GROUP } from '../runtime/index.ts'
import { childLogLine } from '../runtime/role-logger.ts'

/**
 * The installed `triad` command: it registers tsx from this package itself, so the process starts
 * from any working directory (`--import tsx` is resolved from the working directory, and fails
 * outside the clone).
 */
const triadBin = fileURLToPath(new URL('../../bin/triad.js', import.meta.url))

/** What one `triad eval` process evaluates and where it writes the table. */
export interface EvalProcessOptions {
  /** Checkpoint directory (`model.safetensors`, `config.json`, `tokenizer.json`). */
  checkpoint: string
  /** Run directory: the table goes to `<runDir>/eval/<name>.json`. */
  runDir: string
  name: string
  /** Learner step of the evaluated weights. */
  step: number
  title: string
  /** Tasks and the level to evaluate each at. */
  tasks: readonly { name: string; difficulty: number }[]
  k: number
  instances: number
  maxNewTokens: number
  temperature: number
  /** Nucleus sampling mass (absent: 1, off), as the run's other evaluations sample. */
  top_p?: number
  seed: number
  /** Tensor backend to force (default: the best available). */
  backend?: string
  /** The process's stdout and stderr are appended here. */
  logFile: string
}

/** A running evaluation process. */
export interface EvalProcess {
  /** Resolves when it exited, with its exit code (null after a signal) and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Sends it SIGTERM (nothing once it exited). */
  kill(): void
}

/** The arguments of `triad eval` for these options (after `triad`). */
export function evalProcessArgs(o: Omit<EvalProcessOptions, 'logFile'>): string[] {
  return [
    'eval',
    o.checkpoint,
    '--run',
    basename(o.runDir),
    '--runs-dir',
    dirname(o.runDir),
    '--name',
    o.name,
    '--step',
    String(o.step),
    '--title',
    o.title,
    '--tasks',
    o.tasks.map((t) => `${t.name}:${t.difficulty}`).join(','),
    '--k',
    String(o.k),
    '--instances',
    String(o.instances),
    '--max-new-tokens',
    String(o.maxNewTokens),
    '--temperature',
    String(o.temperature),
    ...(o.top_p === undefined ? [] : ['--top-p', String(o.top_p)]),
    '--seed',
    String(o.seed),
    ...(o.backend ? ['--backend', o.backend] : []),
  ]
}

/**
 * Starts `triad eval` in its own process (so an evaluation blocks neither the learner nor the
 * process that started it), ending with this process however it ends (`dieWithParent`). Its output
 * is appended to `logFile`, each line as a pino line of role `eval` (`childLogLine`).
 */
export function startEvalProcess(options: EvalProcessOptions): EvalProcess {
  const line = dieWithParent(process.execPath, [triadBin, ...evalProcessArgs(options)], 'SIGTERM')
  const log = createWriteStream(options.logFile, { flags: 'a' })
  const child = spawn(line.command, line.args, { ...OWN_PROCESS_GROUP, stdio: ['ignore', 'pipe', 'pipe'] })
  // Every line of the log file is a pino line of role `eval` (`childLogLine`).
  const lines = (stream: 'stdout' | 'stderr') =>
    new Promise<void>((resolve) =>
      createInterface({ input: child[stream]! })
        .on('line', (l) => log.write(`${childLogLine(l, { role: 'eval', pid: child.pid }, stream)}\n`))
        .once('close', () => resolve()),
    )
  const output = Promise.all([lines('stdout'), lines('stderr')])
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      void output.then(() => log.end(() => resolve({ code, signal })))
    }),
  )
  return {
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    },
  }
}
