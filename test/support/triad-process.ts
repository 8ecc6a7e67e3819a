import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const triadBin = fileURLToPath(new URL('../../bin/triad.ts', import.meta.url))

/** The first line of `triad run` for a new run (`startedLine`): groups 1 the run id, 2 its directory. */
export const RUN_STARTED = /^run (\S+) started in (\/.+)$/

/** A `triad` CLI child process started by a test. */
export interface TriadProcess {
  child: ChildProcess
  /** Lines printed on stdout so far. */
  stdout: string[]
  /** Everything printed on stderr so far. */
  stderr(): string
  /** Resolves with the first stdout line that parses as JSON and satisfies `match`, or rejects at the deadline or exit. */
  waitForLine(
    match: (json: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>
  /** Resolves with the match of the first stdout line that `pattern` matches, or rejects at the deadline or exit. */
  waitForText(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill(signal?: NodeJS.Signals): Promise<void>
}

/**
 * Starts `triad ...args` with Node and tsx, as a user would run it. `ownGroup`: as a shell starts a
 * foreground command, in a process group of its own (its pid is the group's id), so that a test
 * can signal the whole group as the terminal's Ctrl-C does (`process.kill(-pid, 'SIGINT')`).
 */
export function startTriad(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: { ownGroup?: boolean } = {},
): TriadProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', triadBin, ...args], {
    detached: options.ownGroup === true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
  const stdout: string[] = []
  let err = ''
  const waiters = new Set<(line: string) => void>()
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
  })
  createInterface({ input: child.stdout! }).on('line', (line) => {
    stdout.push(line)
    for (const w of waiters) w(line)
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  /** Resolves with `found(line)` of the first stdout line for which it is defined. */
  const waitFor = <T>(found: (line: string) => T | undefined, timeoutMs: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = (line: string) => {
        const value = found(line)
        if (value !== undefined) {
          done()
          resolve(value)
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(
          new Error(`no matching line from triad ${args.join(' ')} within ${timeoutMs} ms; stderr:\n${err}`),
        )
      }, timeoutMs)
      const onExit = () => {
        done()
        reject(new Error(`triad ${args.join(' ')} exited before printing the line; stderr:\n${err}`))
      }
      const done = () => {
        clearTimeout(timer)
        waiters.delete(check)
        child.off('exit', onExit)
      }
      waiters.add(check)
      child.once('exit', onExit)
      for (const line of stdout) check(line)
    })
  return {
    child,
    stdout,
    stderr: () => err,
    exited,
    waitForLine: (match, timeoutMs = 30_000) =>
      waitFor((line) => {
        try {
          const json = JSON.parse(line) as Record<string, unknown>
          return json && typeof json === 'object' && match(json) ? json : undefined
        } catch {
          return undefined
        }
      }, timeoutMs),
    waitForText: (pattern, timeoutMs = 30_000) =>
      waitFor((line) => pattern.exec(line) ?? undefined, timeoutMs),
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal)
        // A process that does not stop within 5 s of the signal is killed: a test never hangs on it.
        const force = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited
        clearTimeout(force)
      }
    },
  }
}

/** Runs `triad ...args` to completion and returns its output. */
export async function runTriad(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startTriad(args)
  const { code } = await p.exited
  return { code, stdout: p.stdout.join('\n'), stderr: p.stderr() }
}
