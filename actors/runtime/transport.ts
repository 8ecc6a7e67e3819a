import {
  checkVersion,
  decode,
  type Envelope,
  ErrorCode,
  encodeEnvelope,
  errorReply,
  type MessageRegistry,
  type Millis,
  PROTOCOL_VERSION,
  ProtocolError,
  RemoteError,
  ValidationError,
} from '../../protocols/index.ts'

/** Counters of one served subject. */
export interface ServeStats {
  /** Valid requests whose handler replied. */
  handled: number
  /** Valid requests whose handler threw (answered `handler_failed`). */
  errors: number
  /** Requests refused at the boundary: bad bytes, wrong version, unknown type, schema failure. */
  invalid: number
  /**
   * Replies larger than the server's `max_payload`: each was replaced by a short
   * `reply_too_large` error reply naming its size and the limit (NATS transport only).
   */
  repliesTooLarge: number
  /** Replies that could not be sent at all (the connection was closed or gone). */
  repliesUnsent: number
}

/** A `ServeStats` with every counter at 0. */
export function emptyServeStats(): ServeStats {
  return { handled: 0, errors: 0, invalid: 0, repliesTooLarge: 0, repliesUnsent: 0 }
}

/** A request handler: gets a validated envelope, returns the reply envelope. */
export type RequestHandler = (message: Envelope) => Promise<Envelope> | Envelope

/** Options of `Transport.serve`. */
export interface ServeOptions {
  /** The message types accepted on this subject. */
  accepts: MessageRegistry
  handler: RequestHandler
  /** Queue group: requests spread over the members instead of reaching all. */
  queue?: string
  /** Registers a NATS service (`$SRV.PING/INFO/STATS`) for this endpoint (NATS transport only). */
  service?: ServiceSpec
}

/** A NATS service identity for an endpoint. `name` must be a single token (letters, digits, - and _). */
export interface ServiceSpec {
  name: string
  description: string
  version?: string
  /** Extra numbers added to the service's stats `data` (for example actor restarts). */
  stats?: () => Record<string, number>
  metadata?: Record<string, string>
}

/** Options of `Transport.request`. */
export interface RequestOptions {
  /** Deadline of the whole request, retries and reconnect waits included, ms. */
  timeoutMs: Millis
  /** When given, the reply is validated against these types. */
  replies?: MessageRegistry
  /**
   * Retry "no responders" until the deadline (default true: after a reconnect, servers take a
   * moment to subscribe again). False fails at once, for callers with a fallback.
   */
  retryNoResponders?: boolean
  /**
   * Gives the request up when aborted: it rejects at once with `RequestAbortedError` (no-responders
   * retries stop too). The server may still handle it; a late reply is dropped.
   */
  signal?: AbortSignal
}

/** Options of `Transport.subscribe`. */
export interface SubscribeOptions {
  accepts: MessageRegistry
  handler: (message: Envelope, subject: string) => void
  queue?: string
  /** Called with each message refused at the boundary. */
  onInvalid?: (error: Error, subject: string) => void
}

/** A live subscription or served subject. */
export interface Served {
  readonly subject: string
  stats(): ServeStats
  stop(): Promise<void>
}

/**
 * How actors talk. Two implementations pass one contract-test suite: `NatsTransport` and
 * `InProcessTransport` (same codec, same validation, no network).
 */
export interface Transport {
  readonly kind: 'nats' | 'in-process'
  /**
   * Serves requests on `subject` (see `ServeOptions`); resolves once a request sent after it reaches the handler.
   * @throws the connection's error (nats.js `RequestError` "connection disconnected") when the
   *   connection drops before the server has the subscription; nothing is left serving then.
   */
  serve(subject: string, options: ServeOptions): Promise<Served>
  /**
   * Request/reply with a deadline.
   * @throws RemoteError for an `error` reply; RequestTimeoutError when the deadline passes;
   *   NoRespondersError when nobody served the subject until the deadline; ValidationError for a
   *   reply that fails `replies`; TransportClosedError after `close`.
   */
  request(subject: string, message: Envelope, options: RequestOptions): Promise<Envelope>
  /** At-most-once publish (lost if nobody listens or the connection is down). */
  publish(subject: string, message: Envelope): void
  subscribe(subject: string, options: SubscribeOptions): Served
  /** Waits for published messages to reach the server (a no-op in process). */
  flush(): Promise<void>
  close(): Promise<void>
}

/**
 * The boundary of every served subject, shared by both transports: decode and validate the
 * request, run the handler, and turn every failure into an `error` reply. Never throws.
 */
export async function answerRequest(
  bytes: Uint8Array,
  options: ServeOptions,
  stats: ServeStats,
): Promise<Uint8Array> {
  let message: Envelope
  try {
    message = options.accepts.parse(bytes)
  } catch (err) {
    stats.invalid++
    return encodeEnvelope(errorReply(toErrorPayload(err, ErrorCode.InvalidMessage)))
  }
  try {
    const reply = await options.handler(message)
    stats.handled++
    return encodeEnvelope(reply)
  } catch (err) {
    stats.errors++
    return encodeEnvelope(errorReply(toErrorPayload(err, ErrorCode.HandlerFailed)))
  }
}

/**
 * The bytes to send as the reply to a request: `reply` itself when it fits `maxPayload` (bytes;
 * undefined: no limit known), else a short `error` reply with code `reply_too_large` and details
 * `{bytes, type, limit}` (the reply's size in bytes, its message type, the limit in bytes), counted
 * in `stats.repliesTooLarge`. A reply that quotes a huge request (an unknown task name of 1 MB)
 * would otherwise make the send throw in the serving process.
 */
export function fitReply(reply: Uint8Array, maxPayload: number | undefined, stats: ServeStats): Uint8Array {
  if (maxPayload === undefined || reply.byteLength <= maxPayload) return reply
  stats.repliesTooLarge++
  const type = replyType(reply)
  return encodeEnvelope(
    errorReply({
      code: ErrorCode.ReplyTooLarge,
      message: `the ${type} reply of ${reply.byteLength} bytes is over the server's max_payload of ${maxPayload} bytes`,
      details: { bytes: reply.byteLength, type, limit: maxPayload },
    }),
  )
}

/** The `type` of an encoded envelope, cut to 64 characters (`unknown` when it has none). */
function replyType(bytes: Uint8Array): string {
  try {
    const t = (decode(bytes) as Partial<Envelope> | null)?.type
    return typeof t === 'string' ? t.slice(0, 64) : 'unknown'
  } catch {
    return 'unknown'
  }
}

/** Maps any thrown value to an error payload; protocol errors keep their code. */
export function toErrorPayload(err: unknown, fallback: ErrorCode) {
  if (err instanceof ProtocolError) return err.toPayload()
  return { code: fallback, message: err instanceof Error ? err.message : String(err) }
}

/**
 * The requesting side's check of a reply: an `error` reply becomes a thrown `RemoteError`; other
 * replies are validated against `replies` when given, else only the envelope and version.
 */
export function readReply(subject: string, bytes: Uint8Array, replies?: MessageRegistry): Envelope {
  const value = decode(bytes) as Partial<Envelope> | null
  if (value && typeof value === 'object' && value.type === 'error') {
    const p = (value.payload ?? {}) as { code?: string; message?: string; details?: unknown }
    throw new RemoteError(subject, {
      code: (p.code ?? ErrorCode.HandlerFailed) as ErrorCode,
      message: p.message ?? 'error reply without a message',
      details: p.details,
    })
  }
  if (replies) return replies.validate(value)
  if (!value || typeof value !== 'object' || typeof value.type !== 'string' || typeof value.v !== 'string')
    throw new ValidationError(undefined, [{ path: '', message: 'reply is not a triad envelope' }])
  checkVersion(value.v)
  return value as Envelope
}

/** Builds an envelope of the current protocol version. */
export const envelope = <T extends string, P>(type: T, payload: P): Envelope<T, P> => ({
  v: PROTOCOL_VERSION,
  type,
  payload,
})
