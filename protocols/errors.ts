/**
 * Errors of the wire layer. Each class sets `name`, keeps `cause` and carries the data a caller
 * needs to act on it. `ErrorCode` is the closed set of codes an error reply may carry.
 */

/** Codes carried by an `error` reply on the wire. */
export const ErrorCode = {
  /** The bytes could not be decoded as msgpack. */
  BadEncoding: 'bad_encoding',
  /** The message does not match the schema of its `type`. */
  InvalidMessage: 'invalid_message',
  /** The message's `type` is not known to the receiver. */
  UnknownType: 'unknown_type',
  /** The peer speaks another major protocol version. */
  VersionMismatch: 'version_mismatch',
  /** The receiver failed while handling a valid message. */
  HandlerFailed: 'handler_failed',
  /** The request's deadline passed before a reply came. */
  Timeout: 'timeout',
  /** Nobody serves the subject. */
  NoResponders: 'no_responders',
  /** The named thing (session, task, tool) does not exist. */
  NotFound: 'not_found',
  /** The receiver is shutting down, draining or full and takes no new work. */
  Unavailable: 'unavailable',
  /**
   * The receiver's reply was larger than the server's `max_payload`, so it answered this short
   * error instead; `details` carries `{bytes, limit}` (both in bytes).
   */
  ReplyTooLarge: 'reply_too_large',
} as const
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

/** The payload of an `error` reply. */
export interface ErrorPayload {
  /** One of `ErrorCode`. */
  code: ErrorCode
  /** A sentence for a person. */
  message: string
  /** Optional structured detail (for example the schema issues of an invalid message). */
  details?: unknown
}

/** Base class of every protocol error; `code` is the wire code it maps to. */
export class ProtocolError extends Error {
  override name = 'ProtocolError'
  readonly code: ErrorCode
  readonly details?: unknown
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(message, { cause: options?.cause })
    this.code = code
    this.details = options?.details
  }
  /** The error as an `error` reply payload. */
  toPayload(): ErrorPayload {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details }
  }
}

/** Bytes that are not valid msgpack. */
export class DecodeError extends ProtocolError {
  override name = 'DecodeError'
  /** Number of bytes that failed to decode. */
  readonly byteLength: number
  constructor(byteLength: number, cause: unknown) {
    super(ErrorCode.BadEncoding, `cannot decode ${byteLength} bytes as msgpack: ${String(cause)}`, { cause })
    this.byteLength = byteLength
  }
}

/** A message that fails its schema. `issues` lists each failing path. */
export class ValidationError extends ProtocolError {
  override name = 'ValidationError'
  /** The `type` of the message, or undefined when the envelope itself is bad. */
  readonly messageType: string | undefined
  readonly issues: { path: string; message: string }[]
  constructor(messageType: string | undefined, issues: { path: string; message: string }[]) {
    const what = messageType ? `message '${messageType}'` : 'message envelope'
    const list = issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')
    super(ErrorCode.InvalidMessage, `invalid ${what}: ${list}`, { details: issues })
    this.messageType = messageType
    this.issues = issues
  }
}

/** A message whose `type` the receiver does not know. */
export class UnknownTypeError extends ProtocolError {
  override name = 'UnknownTypeError'
  readonly messageType: string
  constructor(messageType: string, known: readonly string[]) {
    super(ErrorCode.UnknownType, `unknown message type '${messageType}'; known types: ${known.join(', ')}`)
    this.messageType = messageType
  }
}

/** A peer of another major protocol version. */
export class VersionMismatchError extends ProtocolError {
  override name = 'VersionMismatchError'
  readonly peerVersion: string
  readonly localVersion: string
  constructor(peerVersion: string, localVersion: string) {
    super(
      ErrorCode.VersionMismatch,
      `peer speaks triad protocol ${peerVersion}, this process speaks ${localVersion}: major versions differ, upgrade one side`,
    )
    this.peerVersion = peerVersion
    this.localVersion = localVersion
  }
}

/**
 * An `error` reply received from a peer, raised on the requesting side.
 * `subject` is where the request went.
 */
export class RemoteError extends ProtocolError {
  override name = 'RemoteError'
  readonly subject: string
  constructor(subject: string, payload: ErrorPayload) {
    super(payload.code, `${subject}: ${payload.message}`, { details: payload.details })
    this.subject = subject
  }
}

/**
 * A name that must be one NATS subject token (a run id, task, role, model or service name) and
 * holds something other than letters, digits, `-` and `_`. Raised before any subject is built.
 */
export class SubjectTokenError extends Error {
  override name = 'SubjectTokenError'
  /** The token as given. */
  readonly token: string
  /** What it names: `run id`, `task`, ... */
  readonly what: string
  constructor(token: string, what: string) {
    super(`invalid ${what} '${token}': use letters, digits, '-' and '_' only`)
    this.token = token
    this.what = what
  }
}

/**
 * Two message definitions of one `type` given to a `MessageRegistry`: a bug in the definitions an
 * actor accepts, raised when the registry is built.
 */
export class DuplicateMessageTypeError extends Error {
  override name = 'DuplicateMessageTypeError'
  readonly messageType: string
  constructor(messageType: string) {
    super(`message type '${messageType}' defined twice`)
    this.messageType = messageType
  }
}

/**
 * A broken invariant: a bug in triad, never bad input. Thrown where code finds a state its own
 * callers promised never to make (an actor spawned under a live actor's name, a step called while
 * another runs, token and logprob counts that differ); the message names the state.
 */
export class InvariantError extends Error {
  override name = 'InvariantError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
