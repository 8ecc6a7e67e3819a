import type { SessionStatus } from '../../protocols/index.ts'
import { ErrorCode, ProtocolError } from '../../protocols/index.ts'

/**
 * Errors of the environment layer. Each is a `ProtocolError`, so an actor answers it as an
 * `error` reply with its `code`; the classes carry the data a caller needs.
 */

/** `env.start` named a task that no registry holds. */
export class UnknownTaskError extends ProtocolError {
  override name = 'UnknownTaskError'
  readonly task: string
  readonly known: readonly string[]
  constructor(task: string, known: readonly string[]) {
    super(ErrorCode.NotFound, `unknown task '${task}'; valid tasks: ${known.join(', ') || '(none)'}`, {
      details: { task, known },
    })
    this.task = task
    this.known = known
  }
}

/** `interact` or `cancel` named a session this worker does not hold (never started, or expired). */
export class UnknownSessionError extends ProtocolError {
  override name = 'UnknownSessionError'
  readonly session: string
  constructor(session: string) {
    super(ErrorCode.NotFound, `unknown session '${session}' (never started here, or expired)`, {
      details: { session },
    })
    this.session = session
  }
}

/** `interact` on a session that has already ended. */
export class SessionEndedError extends ProtocolError {
  override name = 'SessionEndedError'
  readonly session: string
  readonly status: SessionStatus
  constructor(session: string, status: SessionStatus) {
    super(
      ErrorCode.Unavailable,
      `session '${session}' already ended with status '${status}'; start a new one`,
      {
        details: { session, status },
      },
    )
    this.session = session
    this.status = status
  }
}

/** A difficulty outside the task's levels. */
export class DifficultyError extends ProtocolError {
  override name = 'DifficultyError'
  readonly task: string
  readonly difficulty: number
  constructor(task: string, difficulty: number, min: number, max: number) {
    super(ErrorCode.InvalidMessage, `difficulty ${difficulty} is outside ${min}..${max} for task '${task}'`, {
      details: { task, difficulty, min, max },
    })
    this.task = task
    this.difficulty = difficulty
  }
}

/** The worker holds as many sessions as its capacity allows, or is draining. */
export class WorkerUnavailableError extends ProtocolError {
  override name = 'WorkerUnavailableError'
  readonly worker: string
  constructor(worker: string, reason: string) {
    super(ErrorCode.Unavailable, `env worker '${worker}' takes no new sessions: ${reason}`, {
      details: { worker, reason },
    })
    this.worker = worker
  }
}

/** A task could not produce an instance of the requested split (its generator is too narrow). */
export class InstanceError extends ProtocolError {
  override name = 'InstanceError'
  readonly task: string
  constructor(task: string, message: string, cause?: unknown) {
    super(ErrorCode.HandlerFailed, `task '${task}': ${message}`, { cause, details: { task } })
    this.task = task
  }
}

/** A session container could not be made or did not become healthy. */
export class ContainerError extends ProtocolError {
  override name = 'ContainerError'
  readonly task: string
  readonly image: string
  constructor(task: string, image: string, cause: unknown) {
    super(
      ErrorCode.Unavailable,
      `task '${task}': container from image '${image}' failed: ${String((cause as Error)?.message ?? cause)}`,
      {
        cause,
        details: { task, image },
      },
    )
    this.task = task
    this.image = image
  }
}

/** An OpenAI-compatible endpoint failed or answered something that is not a chat completion. */
export class PolicyEndpointError extends Error {
  override name = 'PolicyEndpointError'
  readonly url: string
  readonly status: number | undefined
  /** What answered, or why nothing did (the message without the URL). */
  readonly detail: string
  constructor(url: string, detail: string, status?: number, cause?: unknown) {
    super(`${url}: ${detail}`, { cause })
    this.url = url
    this.status = status
    this.detail = detail
  }
}

/** A task file (`triad env try FILE`) that cannot be loaded: missing, failing to import, or without one task. */
export class TaskFileError extends Error {
  override name = 'TaskFileError'
  readonly file: string
  constructor(file: string, reason: string, cause?: unknown) {
    super(`cannot load task file ${file}: ${reason}`, { cause })
    this.file = file
  }
}

/**
 * A task's code sandbox failed the start check (`checkTaskSandboxes`): it did not answer, answered
 * an HTTP error or something that is not a `/run_code` response, or ran the check program wrong.
 * The message is one line naming the task, where the sandbox is (its URL) and what answered.
 */
export class SandboxCheckError extends ProtocolError {
  override name = 'SandboxCheckError'
  /** The task that needs the sandbox. */
  readonly task: string
  /** Where the sandbox is: its URL, or the backend in this process. */
  readonly where: string
  /** What answered (or why nothing did), one line. */
  readonly detail: string
  constructor(task: string, where: string, detail: string, options?: { cause?: unknown }) {
    super(
      ErrorCode.Unavailable,
      `task '${task}' needs a code sandbox and ${where} failed the start check (print(6 * 7) through /run_code): ${detail}`,
      { cause: options?.cause },
    )
    this.task = task
    this.where = where
    this.detail = detail
  }
}

/**
 * An OpenAI-compatible policy endpoint failed the start check of `triad collect` and `triad eval
 * --policy` (`checkPolicyEndpoint`): one line naming the URL, the model and what answered.
 */
export class PolicyEndpointCheckError extends Error {
  override name = 'PolicyEndpointCheckError'
  readonly url: string
  readonly model: string
  constructor(url: string, model: string, detail: string, options?: { cause?: unknown }) {
    super(
      `policy endpoint ${url} (model '${model}') failed the start check (one chat completion with the task's tools): ${detail}`,
      { cause: options?.cause },
    )
    this.url = url
    this.model = model
  }
}

/** Two tasks of one name given to `taskRegistry` (an env worker's `--tasks calc,calc`). */
export class DuplicateTaskError extends Error {
  override name = 'DuplicateTaskError'
  readonly task: string
  constructor(task: string) {
    super(`task '${task}' registered twice`)
    this.task = task
  }
}

/**
 * A session container's health check command that did not pass before its deadline; the container
 * is removed and its start fails with a ContainerError caused by this one.
 */
export class HealthCheckError extends Error {
  override name = 'HealthCheckError'
  /** The health check command. */
  readonly command: readonly string[]
  constructor(command: readonly string[], last: string) {
    super(`health check ${JSON.stringify(command)} did not pass: ${last}`)
    this.command = command
  }
}

/**
 * The backend a built-in task's tools run on refused a request: the sandbox backend in this
 * process refused a `code` run (a 4xx or 503 outcome of `runCode`), or the `sql` task's worker pool
 * could not open an instance's database.
 */
export class TaskBackendError extends Error {
  override name = 'TaskBackendError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
