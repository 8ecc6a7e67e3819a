/** The nats-server binary is missing or did not become ready. */
export class NatsServerError extends Error {
  override name = 'NatsServerError'
  constructor(
    message: string,
    readonly exitCode?: number | null,
    cause?: unknown,
  ) {
    super(message, { cause })
  }
}

/** A role of a one-process run failed (to start, or while running): nothing can restart it there. */
export class RoleFailedError extends Error {
  override name = 'RoleFailedError'
  constructor(
    /** The role: `learner` or `rollout`. */
    readonly role: string,
    cause: unknown,
  ) {
    super(`the ${role} role failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}
