import type { Envelope, MessageRegistry, Millis } from '../../protocols/index.ts'
import type { ActorRef } from './actor-system.ts'
import type { Served, ServeStats, Transport } from './transport.ts'

/** Options of `exposeActor`. */
export interface ExposeOptions {
  /** The subject the actor answers on. */
  subject: string
  /** Queue group, so several actors of one kind share the load. */
  queue?: string
  /** The message types accepted; anything else gets an error reply and is counted. */
  accepts: MessageRegistry
  /** Deadline for the actor's reply to one request, ms (default 60,000). */
  askTimeoutMs?: Millis
  /** NATS service identity (registered when the transport is NATS). */
  service: {
    name: string
    description: string
    version?: string
    metadata?: Record<string, string>
    /** Extra numbers for the service's `$SRV.STATS` data (for example tokens generated). */
    stats?: () => Record<string, number>
  }
}

/** An actor on a subject; `stats` adds the actor's counters to the boundary's. */
export interface Exposed {
  readonly subject: string
  stats(): ServeStats & { restarts: number; actorErrors: number }
  stop(): Promise<void>
}

/**
 * Puts a local actor on a subject: each request is validated at the boundary, asked of the actor,
 * and its reply sent back. The service's `$SRV.STATS` data carries `handled`, `errors`, `invalid`
 * and the actor's `restarts`.
 */
export async function exposeActor(
  transport: Transport,
  ref: ActorRef,
  options: ExposeOptions,
): Promise<Exposed> {
  const timeout = options.askTimeoutMs ?? 60_000
  const served: Served = await transport.serve(options.subject, {
    accepts: options.accepts,
    queue: options.queue,
    handler: (message) => ref.ask(message, timeout),
    service: {
      ...options.service,
      stats: () => ({
        ...(options.service.stats?.() ?? {}),
        restarts: ref.stats().restarts,
        actorErrors: ref.stats().errors,
      }),
    },
  })
  return {
    subject: options.subject,
    stats: () => ({ ...served.stats(), restarts: ref.stats().restarts, actorErrors: ref.stats().errors }),
    stop: () => served.stop(),
  }
}

/** A reference to an actor on another process, with the same `ask` as a local `ActorRef`. */
export interface RemoteRef {
  readonly subject: string
  /**
   * @param signal gives the request up when aborted (RequestAbortedError).
   * @throws RemoteError for an error reply (invalid message, crash), RequestTimeoutError,
   *   NoRespondersError, RequestAbortedError.
   */
  ask(message: Envelope, timeoutMs: Millis, signal?: AbortSignal): Promise<Envelope>
  /** At-most-once send. */
  tell(message: Envelope): void
}

/** A reference to the actor(s) serving `subject`. `replies` validates the replies when given. */
export function remoteActor(
  transport: Transport,
  subject: string,
  options: { replies?: MessageRegistry } = {},
): RemoteRef {
  return {
    subject,
    ask: (message, timeoutMs, signal) =>
      transport.request(subject, message, { timeoutMs, replies: options.replies, signal }),
    tell: (message) => transport.publish(subject, message),
  }
}
