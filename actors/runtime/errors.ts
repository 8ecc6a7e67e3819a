import type { Millis } from '../../protocols/index.ts'

/** An `ask` whose deadline passed before the actor replied. The message may still be handled. */
export class ActorTimeoutError extends Error {
  override name = 'ActorTimeoutError'
  constructor(
    readonly actorPath: string,
    readonly messageType: string,
    readonly timeoutMs: Millis,
  ) {
    super(`actor ${actorPath} did not answer '${messageType}' within ${timeoutMs} ms`)
  }
}

/** An `ask` or `tell` to an actor that has stopped (or stopped before answering). */
export class ActorStoppedError extends Error {
  override name = 'ActorStoppedError'
  constructor(
    readonly actorPath: string,
    reason?: string,
  ) {
    super(`actor ${actorPath} is stopped${reason ? `: ${reason}` : ''}`)
  }
}

/** The actor crashed while handling this message; the supervisor decides what happens next. */
export class ActorCrashedError extends Error {
  override name = 'ActorCrashedError'
  constructor(
    readonly actorPath: string,
    readonly messageType: string,
    cause: unknown,
  ) {
    super(
      `actor ${actorPath} crashed handling '${messageType}': ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    )
  }
}

/** A request over a transport whose deadline passed (includes time spent waiting for a reconnect). */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError'
  constructor(
    readonly subject: string,
    readonly timeoutMs: Millis,
    cause?: unknown,
  ) {
    super(`request to ${subject} got no reply within ${timeoutMs} ms`, { cause })
  }
}

/**
 * A request in flight when the connection to the NATS server dropped (the server died or
 * restarted): its reply is given up at once instead of at its deadline, since a request still in
 * the dead server's buffers is lost. The request may have been handled, as after a timeout, so it
 * is one (callers that handle timeouts handle it).
 */
export class RequestInterruptedError extends RequestTimeoutError {
  override name = 'RequestInterruptedError'
  constructor(subject: string, timeoutMs: Millis) {
    super(subject, timeoutMs)
    this.message = `request to ${subject} interrupted: the connection to NATS dropped before its reply`
  }
}

/** A request to a subject nobody serves (after retrying until the deadline). */
export class NoRespondersError extends Error {
  override name = 'NoRespondersError'
  constructor(readonly subject: string) {
    super(`no actor serves ${subject}`)
  }
}

/**
 * A request given up by its caller (its `signal` aborted) before a reply came: a node stopping
 * abandons the requests of its agent loops. The server may still handle the request; a late reply
 * is dropped. `cause` is the signal's reason.
 */
export class RequestAbortedError extends Error {
  override name = 'RequestAbortedError'
  constructor(
    readonly subject: string,
    cause?: unknown,
  ) {
    super(`request to ${subject} was abandoned by its caller`, { cause })
  }
}

/**
 * A request or publish larger than the server's `max_payload` (as the connection reports it),
 * refused before anything is sent. Large data goes through the object store instead.
 */
export class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError'
  constructor(
    readonly subject: string,
    /** Size of the encoded message, bytes. */
    readonly bytes: number,
    /** The server's `max_payload`, bytes. */
    readonly limit: number,
  ) {
    super(`message to ${subject} is ${bytes} bytes, over the server's max_payload of ${limit} bytes`)
  }
}

/** Use of a transport after `close()`. */
export class TransportClosedError extends Error {
  override name = 'TransportClosedError'
  constructor(readonly transport: string) {
    super(`${transport} transport is closed`)
  }
}

/** The NATS server could not be reached at connect time. */
export class NatsConnectError extends Error {
  override name = 'NatsConnectError'
  constructor(
    readonly servers: string,
    cause: unknown,
  ) {
    super(`cannot connect to NATS at ${servers}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
  }
}

/**
 * A supervision policy out of range: `maxRestarts` < 0, `withinMs` <= 0 or `backoff.factor` < 1.
 * Raised when a restart tracker is made for it (an actor spawned or a process started under it).
 */
export class SupervisionPolicyError extends Error {
  override name = 'SupervisionPolicyError'
  constructor(message: string) {
    super(message)
  }
}
