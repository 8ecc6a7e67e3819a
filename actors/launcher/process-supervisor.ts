import { type ChildProcess, spawn } from 'node:child_process'
import { createWriteStream, type WriteStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Millis } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import {
  childLogLine,
  dieWithParent,
  isWriteError,
  OWN_PROCESS_GROUP,
  RestartTracker,
  type SupervisionPolicy,
} from '../runtime/index.ts'

/**
 * How long `ProcessSupervisor.stop` waits for a child after SIGTERM before it sends SIGKILL, ms.
 * A child stops by itself well inside it: `triad worker` gives up on a stop that hangs after
 * `CHILD_STOP_WATCHDOG_MS` and exits 1, saying so, before the SIGKILL would end it silently.
 */
export const STOP_GRACE_MS: Millis = 10_000

/**
 * How long a supervised child (`triad worker`) waits for its own stop before it exits 1 with a
 * line that names the role, ms: `STOP_GRACE_MS` less 2 s, so the line is written and the exit
 * seen before the supervisor's SIGKILL.
 */
export const CHILD_STOP_WATCHDOG_MS: Millis = STOP_GRACE_MS - 2_000

/**
 * How long the supervisor waits, after a child exited, for the end of its stdout before it decides
 * what to do, ms: a `{"event":"failed"}` line printed just before the exit may still be in the pipe
 * (a grandchild that keeps the pipe open only delays the decision by this much).
 */
export const OUTPUT_GRACE_MS: Millis = 1_000

/**
 * The line a supervised child prints on stdout (one JSON object) when its work failed, before it
 * exits non-zero: `error` is the one-line message the supervisor reports when it gives up on the
 * child; `restart: false` says that a restart cannot help (a run file that cannot be read, a bad
 * config), so the supervisor gives up at once instead of restarting the child until its limit.
 */
export interface ChildFailure {
  event: 'failed'
  /** The failure's message, first line only. */
  error: string
  restart: boolean
}

/**
 * The `ChildFailure` line for `err` (without the newline). An error object with
 * `restartable: false` (for example `NoReadableCheckpointError`) gives `restart: false`, and so
 * does a write error (`isWriteError`: a full disk, a quota, a read-only file system), which a
 * restart would only meet again.
 */
export function childFailureLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const failure: ChildFailure = {
    event: 'failed',
    error: message.split('\n')[0]!,
    restart: (err as { restartable?: unknown } | undefined)?.restartable !== false && !isWriteError(err),
  }
  return JSON.stringify(failure)
}

/** The `ChildFailure` a stdout line holds, or undefined for any other line. */
export function parseChildFailure(line: string): ChildFailure | undefined {
  if (!line.startsWith('{') || !line.includes('"event":"failed"')) return undefined
  try {
    const json = JSON.parse(line) as Partial<ChildFailure>
    if (json.event !== 'failed' || typeof json.error !== 'string') return undefined
    return { event: 'failed', error: json.error, restart: json.restart !== false }
  } catch {
    return undefined
  }
}

/** One supervised child process: a `triad worker` role, for example. */
export interface ProcessSpec {
  /** Name in logs and events (`learner`, `rollout`). */
  name: string
  command: string
  args: string[]
  env?: NodeJS.ProcessEnv
  /** Appends the child's stdout and stderr here when given. */
  logFile?: string
  /**
   * Called once when `logFile` cannot be written (a full disk): the log stops there, the child
   * runs on. Absent: the failure is only kept from becoming an unhandled `'error'` event.
   */
  onLogError?: (err: Error) => void
  /**
   * `permanent` (default): restarted whenever it exits. `transient`: restarted only after an
   * abnormal exit (non-zero code or a signal); a clean exit means its work is done.
   */
  restart?: 'permanent' | 'transient'
}

/**
 * What the supervisor does after a child exited: `restart` it (after `restartInMs`), nothing
 * because it is stopping every child (`stop`), nothing because a `transient` child finished its
 * work (`done`), or nothing because the restart limit is reached or the child said that a restart
 * cannot help (`give-up`, a `gave-up` event follows).
 */
export const AfterExit = { Restart: 'restart', Stop: 'stop', Done: 'done', GiveUp: 'give-up' } as const
export type AfterExit = (typeof AfterExit)[keyof typeof AfterExit]

/** What happened to a child. */
export type ProcessEvent =
  | { type: 'started'; name: string; pid: number; restarts: number }
  | { type: 'ready'; name: string; pid: number }
  | {
      type: 'exited'
      name: string
      pid: number
      code: number | null
      signal: NodeJS.Signals | null
      next: AfterExit
      /** With `next: 'restart'`: the backoff before the new start, ms. */
      restartInMs?: Millis
    }
  | {
      type: 'gave-up'
      name: string
      restarts: number
      /**
       * Why: `limit` (it failed more often than the policy allows) or `not-restartable` (its last
       * `ChildFailure` line said a restart cannot help).
       */
      reason: 'limit' | 'not-restartable'
      /**
       * What went wrong last: the `error` of its last `ChildFailure` line, else how it exited
       * (`exit code 1`, `signal SIGKILL`).
       */
      error: string
      /** Its log file, when it has one. */
      logFile?: string
    }

/**
 * The line a person reads for a supervisor event, or undefined for events not worth a line
 * (`started`, `ready`, a `transient` child that finished): `rollout (pid 12) exited (code 1);
 * restarting in 200 ms`, `learner (pid 11) stopped (SIGKILL)` during shutdown, `rollout failed too
 * often; giving up on it (last: exit code 1)`, `learner failed and a restart cannot help; giving
 * up on it (<error>)`.
 */
export function processEventLine(e: ProcessEvent): string | undefined {
  if (e.type === 'gave-up')
    return e.reason === 'limit'
      ? `${e.name} failed too often; giving up on it (last: ${e.error})`
      : `${e.name} failed and a restart cannot help; giving up on it (${e.error})`
  if (e.type !== 'exited') return undefined
  const how = e.signal ?? `code ${e.code}`
  const who = `${e.name} (pid ${e.pid})`
  if (e.next === 'restart') return `${who} exited (${how}); restarting in ${e.restartInMs ?? 0} ms`
  if (e.next === 'stop') return e.code === 0 ? `${who} stopped` : `${who} stopped (${how})`
  if (e.next === 'give-up') return `${who} exited (${how})`
  return undefined
}

/**
 * An appending write stream of a child's log file whose write error (a full disk) is reported once
 * to `onError` and ends the stream: later lines are dropped instead of an unhandled `'error'`
 * event ending the supervisor's process.
 */
export function logStream(file: string, onError?: (err: Error) => void): WriteStream {
  const stream = createWriteStream(file, { flags: 'a' })
  let failed = false
  stream.on('error', (err) => {
    if (failed) return
    failed = true
    onError?.(err)
  })
  // The stream is destroyed by its error: later writes fail quietly (no second 'error' event).
  return stream
}

/** Default restart policy of a role's process: 5 restarts within a minute, 200 ms to 5 s apart. */
export const PROCESS_SUPERVISION: SupervisionPolicy = {
  maxRestarts: 5,
  withinMs: 60_000,
  backoff: { initialMs: 200, maxMs: 5_000, factor: 2 },
  onLimit: 'stop',
}

/** A supervised child as the supervisor tracks it. */
export interface SupervisedProcess {
  readonly name: string
  pid(): number | undefined
  restarts(): number
  /** Resolves when the child has printed its `{"event":"ready"}` line (after the latest start). */
  ready(): Promise<void>
  /** Resolves when a `transient` child has exited cleanly (its work is done). */
  readonly finished: Promise<void>
}

/**
 * A one-for-one supervisor of OS processes (the parent of every node's actor tree): a child that
 * exits while the supervisor runs is started again after an exponential backoff; past the
 * policy's limit it is given up and reported. `stop` sends SIGTERM to every child and waits.
 * Children end with this process: on Linux the kernel sends them SIGTERM when it dies, `kill -9`
 * included (`dieWithParent`), so a child must stop by itself on SIGTERM (`triad worker` does,
 * within `CHILD_STOP_WATCHDOG_MS`, inside the `STOP_GRACE_MS` before SIGKILL).
 */
export class ProcessSupervisor {
  private readonly children = new Map<
    string,
    {
      spec: ProcessSpec
      child?: ChildProcess
      tracker: RestartTracker
      ready: Promise<void>
      restarts: number
      log?: WriteStream
      finished: boolean
      onFinished: () => void
      /** The last `ChildFailure` line of the current start, if any. */
      failure?: ChildFailure
    }
  >()
  private stopping = false
  private readonly listeners: ((e: ProcessEvent) => void)[] = []

  constructor(private readonly policy: SupervisionPolicy = PROCESS_SUPERVISION) {}

  on(listener: (e: ProcessEvent) => void): void {
    this.listeners.push(listener)
  }

  private emit(e: ProcessEvent): void {
    for (const l of this.listeners) l(e)
  }

  /** Starts a child under supervision. @throws InvariantError on a duplicate name. */
  start(spec: ProcessSpec): SupervisedProcess {
    if (this.children.has(spec.name))
      throw new InvariantError(`a process named '${spec.name}' is already supervised`)
    const entry = {
      spec,
      tracker: new RestartTracker(this.policy),
      ready: Promise.resolve(),
      restarts: 0,
      log: spec.logFile ? logStream(spec.logFile, spec.onLogError) : undefined,
      child: undefined as ChildProcess | undefined,
      finished: false,
      onFinished: () => {},
    }
    const finishedPromise = new Promise<void>((resolve) => {
      entry.onFinished = resolve
    })
    this.children.set(spec.name, entry)
    this.launch(spec.name)
    return {
      name: spec.name,
      pid: () => entry.child?.pid,
      restarts: () => entry.restarts,
      ready: () => entry.ready,
      finished: finishedPromise,
    }
  }

  private launch(name: string): void {
    const entry = this.children.get(name)!
    const { spec } = entry
    entry.failure = undefined
    const line = dieWithParent(spec.command, spec.args, 'SIGTERM')
    const child = spawn(line.command, line.args, {
      ...OWN_PROCESS_GROUP,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...spec.env },
    })
    entry.child = child
    entry.ready = new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        entry.log?.write(`${childLogLine(line, { role: name, pid: child.pid }, 'stdout')}\n`)
        const failure = parseChildFailure(line)
        if (failure) entry.failure = failure
        if (line.startsWith('{') && line.includes('"event":"ready"')) {
          this.emit({ type: 'ready', name, pid: child.pid! })
          resolve()
        }
      })
      child.once('exit', () => reject(new Error(`${name} exited before it was ready`)))
    })
    entry.ready.catch(() => undefined)
    // Every line of the log file is a pino line (`childLogLine`): the role's own, or wrapped.
    createInterface({ input: child.stderr! }).on('line', (line) =>
      entry.log?.write(`${childLogLine(line, { role: name, pid: child.pid }, 'stderr')}\n`),
    )
    this.emit({ type: 'started', name, pid: child.pid!, restarts: entry.restarts })
    const outputEnded = new Promise<void>((resolve) => child.stdout!.once('close', () => resolve()))
    child.once('exit', (code, signal) => {
      const exited = { type: 'exited', name, pid: child.pid!, code, signal } as const
      if (this.stopping) {
        this.emit({ ...exited, next: 'stop' })
        return
      }
      // The decision waits for the child's last lines (a failure line just before its exit).
      let timer: NodeJS.Timeout | undefined
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, OUTPUT_GRACE_MS)
      })
      void Promise.race([outputEnded, grace]).then(() => {
        clearTimeout(timer)
        this.afterExit(name, exited)
      })
    })
  }

  /** Decides what follows the exit of a child while the supervisor runs (see `AfterExit`). */
  private afterExit(
    name: string,
    exited: { type: 'exited'; name: string; pid: number; code: number | null; signal: NodeJS.Signals | null },
  ): void {
    const entry = this.children.get(name)!
    const { spec } = entry
    if (this.stopping) {
      this.emit({ ...exited, next: 'stop' })
      return
    }
    if (spec.restart === 'transient' && exited.code === 0) {
      this.emit({ ...exited, next: 'done' })
      entry.finished = true
      entry.onFinished()
      return
    }
    const failure = entry.failure
    const notRestartable = failure?.restart === false
    const decision = notRestartable ? undefined : entry.tracker.onCrash(Date.now())
    if (decision?.action !== 'restart') {
      this.emit({ ...exited, next: 'give-up' })
      this.emit({
        type: 'gave-up',
        name,
        restarts: entry.restarts,
        reason: notRestartable ? 'not-restartable' : 'limit',
        error: failure?.error ?? (exited.signal ? `signal ${exited.signal}` : `exit code ${exited.code}`),
        ...(spec.logFile ? { logFile: spec.logFile } : {}),
      })
      return
    }
    this.emit({ ...exited, next: 'restart', restartInMs: decision.delayMs })
    setTimeout(() => {
      if (this.stopping) return
      entry.restarts++
      this.launch(name)
    }, decision.delayMs)
  }

  /** Sends SIGTERM to every child and waits for them (SIGKILL after `graceMs`, default `STOP_GRACE_MS`). */
  async stop(graceMs: Millis = STOP_GRACE_MS): Promise<void> {
    this.stopping = true
    await Promise.all(
      [...this.children.values()].map(async (e) => {
        const c = e.child
        if (c && c.exitCode === null && c.signalCode === null) {
          const exited = new Promise<void>((r) => c.once('exit', () => r()))
          c.kill('SIGTERM')
          const t = setTimeout(() => c.kill('SIGKILL'), graceMs)
          await exited
          clearTimeout(t)
        }
        e.log?.end()
      }),
    )
  }
}
