import type { Millis } from '../../protocols/index.ts'
import { RestartTracker, type SupervisionPolicy } from '../runtime/index.ts'
import { NatsServerError } from './errors.ts'
import { type NatsServer, portInUse } from './nats-server.ts'

/** What happened to a supervised NATS server (`superviseNatsServer`). */
export type NatsServerEvent =
  | {
      type: 'exited'
      pid: number
      code: number | null
      signal: NodeJS.Signals | null
      /** The backoff before the restart, ms. */
      restartInMs: Millis
    }
  | { type: 'restart-failed'; error: string; restartInMs: Millis }
  | { type: 'restarted'; pid: number; restarts: number }
  | { type: 'gave-up'; restarts: number; error: string }

/**
 * The line a person reads for a supervised server's event: `nats-server (pid 12) exited (SIGKILL);
 * restarting in 200 ms on port 4222`, `nats-server restarted (pid 13) on port 4222 with its
 * store`, `nats-server cannot come back: <error>`.
 */
export function natsServerEventLine(e: NatsServerEvent, port: number): string {
  if (e.type === 'exited')
    return `nats-server (pid ${e.pid}) exited (${e.signal ?? `code ${e.code}`}); restarting in ${e.restartInMs} ms on port ${port}`
  if (e.type === 'restart-failed')
    return `nats-server did not start again (${e.error}); retrying in ${e.restartInMs} ms`
  if (e.type === 'restarted') return `nats-server restarted (pid ${e.pid}) on port ${port} with its store`
  return `nats-server cannot come back after ${e.restarts} restarts: ${e.error}`
}

/** Default restart policy of the embedded server: 5 restarts within a minute, 200 ms to 5 s apart. */
export const NATS_SERVER_SUPERVISION: SupervisionPolicy = {
  maxRestarts: 5,
  withinMs: 60_000,
  backoff: { initialMs: 200, maxMs: 5_000, factor: 2 },
  onLimit: 'stop',
}

/** A supervised NATS server: `failed` rejects when it cannot come back. */
export interface NatsServerSupervision {
  /** Rejects with NatsServerError (one line) once the server is given up; never resolves. */
  readonly failed: Promise<never>
  /** Restarts so far. */
  restarts(): number
  /** Ends the supervision (before `server.stop`): an exit after this is not restarted. */
  stop(): void
}

/**
 * Supervises `server` like a role's process: each unasked exit (a crash, `kill -9`) restarts it on
 * its port and JetStream store after the policy's backoff, so clients reconnect and the stream
 * keeps its groups. A start that fails counts as another failure; past the policy's limit the
 * server is given up (`gave-up` event, `failed` rejects).
 * @param onEvent each event, for the live view and `logs/run.jsonl`.
 */
export function superviseNatsServer(
  server: NatsServer,
  onEvent: (e: NatsServerEvent) => void,
  policy: SupervisionPolicy = NATS_SERVER_SUPERVISION,
): NatsServerSupervision {
  const tracker = new RestartTracker(policy)
  let stopped = false
  let restarts = 0
  let timer: NodeJS.Timeout | undefined
  let giveUp: (err: NatsServerError) => void = () => {}
  const failed = new Promise<never>((_, reject) => {
    giveUp = reject
  })
  failed.catch(() => undefined)

  /** After a failure (`error`): schedules the next start, or gives up. */
  const next = (error: string, report: (restartInMs: Millis) => void) => {
    const decision = tracker.onCrash(Date.now())
    if (decision.action !== 'restart') {
      onEvent({ type: 'gave-up', restarts, error })
      giveUp(new NatsServerError(`nats-server on port ${server.port} cannot come back: ${error}`))
      return
    }
    report(decision.delayMs)
    timer = setTimeout(() => void start(), decision.delayMs)
  }
  const start = async () => {
    if (stopped) return
    try {
      restarts++
      await server.restart()
      if (stopped) return
      onEvent({ type: 'restarted', pid: server.pid()!, restarts })
    } catch (err) {
      if (stopped) return
      const message = (err as Error).message ?? String(err)
      const taken = portInUse(message)
      const error =
        taken === undefined ? message.split('\n')[0]! : `port ${taken} is in use by another process`
      next(error, (restartInMs) => onEvent({ type: 'restart-failed', error, restartInMs }))
    }
  }
  server.onExit((exit) => {
    if (stopped) return
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    next(how, (restartInMs) => onEvent({ type: 'exited', ...exit, restartInMs }))
  })
  return {
    failed,
    restarts: () => restarts,
    stop: () => {
      stopped = true
      clearTimeout(timer)
    },
  }
}
