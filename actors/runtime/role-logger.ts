import { hostname } from 'node:os'
import { type DestinationStream, type Logger, pino } from 'pino'

/**
 * pino's numeric levels (the `level` field of every line of a role's log file): 10 trace, 20 debug,
 * 30 info, 40 warn, 50 error, 60 fatal.
 */
export const LogLevels = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const

/** Who writes a log: the fields every line of it carries. */
export interface RoleLogBindings {
  /** The role (`learner`, `rollout`, `policy`, `eval`, ...). */
  role: string
  /** The role's id within the run. */
  id?: string
  /** The run id. */
  run?: string
}

/**
 * A pino logger for one role: one JSON object per line, `{"level":30,"time":<ms since the epoch>,
 * "pid":..,"hostname":..,"role":..,"id":..,"run":..,"msg":..}`, written synchronously (a crash
 * loses no line) to `destination`: a file descriptor (2 for stderr) or a file path, appended to.
 * A write that fails (a full disk) is reported once to `onError` (sonic-boom emits it as an
 * `'error'` event, kept here from being unhandled): a log is never what ends a role.
 */
export function createRoleLogger(
  bindings: RoleLogBindings,
  destination: number | string,
  onError?: (err: Error) => void,
): Logger {
  const dest: DestinationStream & { on?: (event: 'error', listener: (err: Error) => void) => void } =
    typeof destination === 'number'
      ? pino.destination({ fd: destination, sync: true })
      : pino.destination({ dest: destination, append: true, mkdir: true, sync: true })
  let failed = false
  dest.on?.('error', (err) => {
    if (failed) return
    failed = true
    onError?.(err)
  })
  return pino({ base: { pid: process.pid, hostname: hostname() } }, dest).child(bindings)
}

/**
 * Flushes a logger of `createRoleLogger` and, when it writes to a file path, closes its file;
 * later lines are dropped.
 */
export function closeRoleLogger(logger: Logger): void {
  logger.flush()
  const stream = (logger as unknown as Record<symbol, { end?: () => void; fd?: number }>)[ // cast: pino keeps its destination stream behind a symbol it does not type
    pino.symbols.streamSym
  ]
  if (stream && typeof stream.fd === 'number' && stream.fd > 2) stream.end?.()
}

/** The `log: (line) => void` of a role's options, as `info` lines of `logger`. */
export const infoLines =
  (logger: Logger) =>
  (line: string): void =>
    logger.info(line)

/** Where a line of a child process's output came from. */
export type OutputStream = 'stdout' | 'stderr'

/**
 * One line of a child process's output as a line of its role's log file: a pino line (a JSON
 * object with a numeric `level`) as it is; any other line (a protocol line such as
 * `{"event":"ready"}`, or text a library printed) wrapped as a pino line of the role, level info
 * for stdout and warn for stderr (error for a child's failure line), its text in `msg` (a JSON
 * object's fields kept beside it).
 * @param time ms since the epoch.
 */
export function childLogLine(
  line: string,
  who: { role: string; pid: number | undefined },
  stream: OutputStream,
  time = Date.now(),
): string {
  let parsed: unknown
  if (line.startsWith('{'))
    try {
      parsed = JSON.parse(line)
    } catch {
      parsed = undefined
    }
  const object =
    parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined
  if (object && typeof object.level === 'number') return line
  const failed = object?.event === 'failed'
  const level = failed ? LogLevels.error : stream === 'stdout' ? LogLevels.info : LogLevels.warn
  const msg = object ? String(object.event ?? line) : line
  const { level: _level, time: _time, msg: _msg, ...fields } = object ?? {}
  return JSON.stringify({
    level,
    time,
    pid: who.pid,
    hostname: hostname(),
    role: who.role,
    stream,
    ...fields,
    msg,
  })
}
