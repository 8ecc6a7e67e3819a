/**
 * The kinds of OpenAI API error (`error.type` of an error object). Closed set, as the OpenAI API
 * and vLLM use them.
 */
export const ApiErrorType = {
  /** A malformed or invalid request (HTTP 400, 413, 415, 422). */
  InvalidRequest: 'invalid_request_error',
  /** A model or route that does not exist (HTTP 404). */
  NotFound: 'not_found_error',
  /** A failure of the server itself (HTTP 500). */
  Server: 'server_error',
} as const
export type ApiErrorType = (typeof ApiErrorType)[keyof typeof ApiErrorType]

/** The body of an OpenAI-style error reply. */
export interface ApiErrorBody {
  error: {
    /** One line for a person. */
    message: string
    type: ApiErrorType
    /** The request field at fault (`messages[1].role`), or null. */
    param: string | null
    /** A machine-readable code (`model_not_found`, `context_length_exceeded`), or null. */
    code: string | null
  }
}

/**
 * A request the chat server refuses: answered with HTTP `status` and `body()` as its JSON body.
 */
export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    /** HTTP status. */
    readonly status: number,
    message: string,
    readonly type: ApiErrorType,
    readonly param: string | null = null,
    readonly code: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }

  /** The OpenAI-style error object. */
  body(): ApiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } }
  }
}

/** A model directory `triad serve` cannot serve (one line naming the directory and why). */
export class ServeModelError extends Error {
  override name = 'ServeModelError'
  constructor(
    readonly dir: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${dir}: ${message}`, options)
  }
}
