import {
  EnvCancel,
  EnvCancelled,
  type Envelope,
  EnvInteract,
  EnvInteracted,
  EnvStart,
  EnvStarted,
  errorReply,
  type Millis,
  type PayloadOf,
  ProtocolError,
  SessionStatus,
} from '../../protocols/index.ts'
import { SessionEndedError, UnknownSessionError, WorkerUnavailableError } from './errors.ts'
import { resolveInstance } from './instance.ts'
import { lookupTask, type TaskRegistry } from './registry.ts'
import { TaskRng } from './rng.ts'
import { Session } from './session.ts'
import type { OpenContext } from './task.ts'
import { validatorFor } from './tool-args.ts'

/**
 * The sessions of one environment worker: serves `env.start`, `env.interact` and `env.cancel` as
 * plain methods (and as envelopes through `handle`), enforces the worker's capacity, and expires
 * idle sessions. The env-worker actor wraps one of these.
 */

/** Settings of a session host. */
export interface SessionHostOptions {
  /** The worker's id (unique in a run); session ids start with it. */
  workerId: string
  /** The worker's own subject, returned by `start` for sticky `interact`/`cancel`. */
  subject: string
  /** The tasks this worker serves. */
  tasks: TaskRegistry
  /** Most sessions at once. */
  capacity: number
  /** A session with no `interact` for this long is ended (status `cancelled`, counted `expired`). */
  idleTimeoutMs: Millis
  /** Time source in ms. */
  now: () => Millis
  /** Seed for instances started without `index` or `seed`. */
  seed: number
  /** How many ended sessions to remember for a clear "already ended" answer. */
  rememberEnded?: number
}

/** Counters of a host (monotonic except `active`). */
export interface SessionHostStats {
  active: number
  capacity: number
  started: number
  ended: number
  expired: number
  cancelled: number
  errors: number
  interactions: number
}

/** The sessions of one worker. */
export class SessionHost {
  private readonly sessions = new Map<string, Session>()
  private readonly ended = new Map<string, SessionStatus>()
  private readonly random: TaskRng
  private counter = 0
  private draining = false
  readonly counts: Omit<SessionHostStats, 'active' | 'capacity'> = {
    started: 0,
    ended: 0,
    expired: 0,
    cancelled: 0,
    errors: 0,
    interactions: 0,
  }

  constructor(readonly options: SessionHostOptions) {
    this.random = new TaskRng(`host:${options.workerId}:${options.seed}`)
  }

  /** Counters and the number of live sessions. */
  stats(): SessionHostStats {
    return { active: this.sessions.size, capacity: this.options.capacity, ...this.counts }
  }

  /** Free places for new sessions (0 while draining). */
  free(): number {
    return this.draining ? 0 : Math.max(0, this.options.capacity - this.sessions.size)
  }

  /** Ids of live sessions. */
  sessionIds(): string[] {
    return [...this.sessions.keys()]
  }

  /** True once drained. */
  isDraining(): boolean {
    return this.draining
  }

  /** Stops taking new sessions; live ones go on. */
  drain(): void {
    this.draining = true
  }

  /**
   * Starts a session.
   * @throws UnknownTaskError, DifficultyError, WorkerUnavailableError (full or draining),
   *   InstanceError, or what the task's `open` throws.
   */
  async start(
    request: PayloadOf<typeof EnvStart>,
    context: OpenContext = {},
  ): Promise<PayloadOf<typeof EnvStarted>> {
    const task = lookupTask(this.options.tasks, request.task)
    if (this.draining) throw new WorkerUnavailableError(this.options.workerId, 'draining')
    if (this.sessions.size >= this.options.capacity)
      throw new WorkerUnavailableError(this.options.workerId, `full (${this.options.capacity} sessions)`)
    const resolved = resolveInstance(task, request, this.random)
    const validator = validatorFor(task.tools)
    this.counter += 1
    const id = `${this.options.workerId}-${this.counter}`
    const session = await Session.open(id, task, resolved, validator, this.options.now(), context)
    this.sessions.set(id, session)
    this.counts.started += 1
    return {
      session: id,
      worker: this.options.subject,
      messages: session.firstMessages,
      tools: [...task.tools],
    }
  }

  /**
   * Applies one assistant message to a session.
   * @throws UnknownSessionError, SessionEndedError.
   */
  async interact(request: PayloadOf<typeof EnvInteract>): Promise<PayloadOf<typeof EnvInteracted>> {
    const session = this.sessions.get(request.session)
    if (!session) this.throwMissing(request.session)
    this.counts.interactions += 1
    const step = await session.interact(request.message, this.options.now())
    if (step.done) this.forget(session)
    return step
  }

  /** Cancels a session. @throws UnknownSessionError for a session never started here. */
  async cancel(request: PayloadOf<typeof EnvCancel>): Promise<PayloadOf<typeof EnvCancelled>> {
    const session = this.sessions.get(request.session)
    if (!session) {
      if (this.ended.has(request.session)) return { session: request.session }
      throw new UnknownSessionError(request.session)
    }
    await session.cancel()
    this.counts.cancelled += 1
    this.forget(session)
    return { session: request.session }
  }

  /** Cancels every live session; returns their ids. */
  async cancelAll(): Promise<string[]> {
    const ids = this.sessionIds()
    for (const id of ids) await this.cancel({ session: id })
    return ids
  }

  /** Ends sessions idle for longer than the idle timeout; returns their ids. */
  async expireIdle(): Promise<string[]> {
    const now = this.options.now()
    const out: string[] = []
    for (const s of [...this.sessions.values()]) {
      if (now - s.lastActive <= this.options.idleTimeoutMs) continue
      await s.abort(SessionStatus.Cancelled)
      this.counts.expired += 1
      this.forget(s)
      out.push(s.id)
    }
    return out
  }

  /**
   * Serves one request envelope (`env.start`, `env.interact`, `env.cancel`, already validated) and
   * returns the reply; protocol errors become `error` replies, anything else is rethrown.
   */
  async handle(message: Envelope): Promise<Envelope> {
    try {
      switch (message.type) {
        case EnvStart.type:
          return EnvStarted.make(await this.start(message.payload as PayloadOf<typeof EnvStart>))
        case EnvInteract.type:
          return EnvInteracted.make(await this.interact(message.payload as PayloadOf<typeof EnvInteract>))
        case EnvCancel.type:
          return EnvCancelled.make(await this.cancel(message.payload as PayloadOf<typeof EnvCancel>))
        default:
          throw new ProtocolError('unknown_type', `env worker does not serve '${message.type}'`)
      }
    } catch (e) {
      if (e instanceof ProtocolError) {
        this.counts.errors += 1
        return errorReply(e.toPayload())
      }
      throw e
    }
  }

  private throwMissing(session: string): never {
    const status = this.ended.get(session)
    if (status !== undefined) {
      throw new SessionEndedError(session, status)
    }
    throw new UnknownSessionError(session)
  }

  private forget(session: Session): void {
    this.sessions.delete(session.id)
    this.counts.ended += 1
    this.ended.set(session.id, session.status)
    const keep = this.options.rememberEnded ?? 10_000
    while (this.ended.size > keep) this.ended.delete(this.ended.keys().next().value!)
  }
}
