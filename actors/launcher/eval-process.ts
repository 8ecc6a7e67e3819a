import { spawn } from 'node:child_process'
import { hostname } from 'node:os'
import { basename, dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { childLogLine, dieWithParent, isWriteError, LogLevels, OWN_PROCESS_GROUP } from '../runtime/index.ts'
import { logStream } from './process-supervisor.ts'

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
  /**
   * Called once when `logFile` cannot be written (a full disk); the log stops there. Absent: the
   * failure is only kept from becoming an unhandled `'error'` event.
   */
  onLogError?: (err: Error) => void
}

/** A running evaluation process. */
export interface EvalProcess {
  /**
   * Resolves when it exited, with its exit code (null after a signal) and signal, and the first
   * line of its output that reported a write error (`isWriteError`: a full disk), if any; that line
   * is kept here because the log file may be on the same full disk.
   */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; writeError?: string }>
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
 * One line of a `triad eval` process for its log file (`childLogLine`, role `eval`): its stderr
 * carries what it does (the settings it took, the backend, the file it wrote), so a plain line
 * there is at info level, not warn; its failure is said at error level when it exits.
 */
function evalLogLine(line: string, pid: number | undefined, stream: 'stdout' | 'stderr'): string {
  const out = childLogLine(line, { role: 'eval', pid }, stream)
  if (stream === 'stdout') return out
  const entry = JSON.parse(out) as { level: number }
  return entry.level === LogLevels.warn ? JSON.stringify({ ...entry, level: LogLevels.info }) : out
}

/**
 * Starts `triad eval` in its own process (so an evaluation blocks neither the learner nor the
 * process that started it), ending with this process however it ends (`dieWithParent`). Its output
 * is appended to `logFile`, each line as a pino line of role `eval` (`evalLogLine`: info, and one
 * error line when it fails).
 */
export function startEvalProcess(options: EvalProcessOptions): EvalProcess {
  const line = dieWithParent(process.execPath, [triadBin, ...evalProcessArgs(options)], 'SIGTERM')
  const log = logStream(options.logFile, options.onLogError)
  const child = spawn(line.command, line.args, { ...OWN_PROCESS_GROUP, stdio: ['ignore', 'pipe', 'pipe'] })
  let writeError: string | undefined
  let lastStderr: string | undefined
  // Every line of the log file is a pino line of role `eval` (`childLogLine`).
  const lines = (stream: 'stdout' | 'stderr') =>
    new Promise<void>((resolve) =>
      createInterface({ input: child[stream]! })
        .on('line', (l) => {
          if (writeError === undefined && isWriteError({ message: l })) writeError = l
          log.write(`${evalLogLine(l, child.pid, stream)}\n`)
          if (stream === 'stderr') lastStderr = l
        })
        .once('close', () => resolve()),
    )
  const output = Promise.all([lines('stdout'), lines('stderr')])
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; writeError?: string }>(
    (resolve) =>
      child.once('close', (code, signal) => {
        void output.then(() => {
          // The one line of a failure is the process's last line on stderr: said at error level.
          if (code !== 0 && code !== null)
            log.write(
              `${JSON.stringify({ level: LogLevels.error, time: Date.now(), pid: child.pid, hostname: hostname(), role: 'eval', msg: `triad eval exited with code ${code}${lastStderr ? `: ${lastStderr}` : ''}` })}\n`,
            )
          log.end(() => resolve({ code, signal, ...(writeError ? { writeError } : {}) }))
        })
      }),
  )
  return {
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    },
  }
}
