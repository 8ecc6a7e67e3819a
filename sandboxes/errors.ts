/**
 * Errors of the code sandbox. Each class sets `name`, keeps `cause` and carries the data a caller
 * needs to act on it.
 */

/** The sandbox service cannot be reached or does not answer as a triad/SandboxFusion sandbox. */
export class SandboxUnreachableError extends Error {
  override name = 'SandboxUnreachableError'
  /** The base URL that was tried. */
  readonly url: string
  constructor(url: string, detail: string, options?: { cause?: unknown }) {
    super(`code sandbox at ${url} is unreachable: ${detail}`, { cause: options?.cause })
    this.url = url
  }
}

/** The sandbox answered a request with an HTTP error (after retries, for transient ones). */
export class SandboxHttpError extends Error {
  override name = 'SandboxHttpError'
  readonly url: string
  /** The HTTP status code. */
  readonly statusCode: number
  /** The response body, as text. */
  readonly body: string
  constructor(url: string, statusCode: number, body: string) {
    super(`code sandbox at ${url} answered HTTP ${statusCode}: ${body.slice(0, 500)}`)
    this.url = url
    this.statusCode = statusCode
    this.body = body
  }
}

/** A request the sandbox refuses before running anything (bad path, limits, language). */
export class SandboxRequestError extends Error {
  override name = 'SandboxRequestError'
  /** The HTTP status to answer with (400, 413 or 422). */
  readonly statusCode: number
  constructor(message: string, statusCode = 422) {
    super(message)
    this.statusCode = statusCode
  }
}

/** All slots are busy and the wait queue is full: the caller should retry later (HTTP 503). */
export class SandboxBusyError extends Error {
  override name = 'SandboxBusyError'
  readonly queued: number
  constructor(queued: number) {
    super(`sandbox is full: ${queued} requests already wait for a slot`)
    this.queued = queued
  }
}

/** The backend failed to run a job (container died, runner crashed, docker error). */
export class BackendError extends Error {
  override name = 'BackendError'
  /** `docker` or `local`. */
  readonly backend: string
  constructor(backend: string, message: string, options?: { cause?: unknown }) {
    super(`${backend} backend: ${message}`, { cause: options?.cause })
    this.backend = backend
  }
}

/** The sandbox image is missing or stale: run `triad sandbox image build`. */
export class SandboxImageError extends Error {
  override name = 'SandboxImageError'
  readonly image: string
  constructor(image: string, detail: string, options?: { cause?: unknown }) {
    super(`sandbox image '${image}': ${detail}; build it with 'triad sandbox image build'`, {
      cause: options?.cause,
    })
    this.image = image
  }
}

/** A warm sandbox was found dead before a job started in it; the pool replaces it and retries. */
export class SandboxLostError extends Error {
  override name = 'SandboxLostError'
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`a warm sandbox was lost before the job started: ${detail}`, { cause: options?.cause })
  }
}

/**
 * An answer of a sandbox's `GET /health` that is not a sandbox's: an HTTP error status, or a body
 * that is not a health object. `SandboxClient.connect` retries on it, then raises
 * SandboxUnreachableError with it as the cause.
 */
export class SandboxHealthError extends Error {
  override name = 'SandboxHealthError'
  /** The HTTP status of the answer. */
  readonly statusCode: number
  constructor(message: string, statusCode: number) {
    super(message)
    this.statusCode = statusCode
  }
}
