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
    /** The role's log file, named at the end of the message when given. */
    readonly logFile?: string,
  ) {
    super(
      `the ${role} role failed: ${cause instanceof Error ? cause.message : String(cause)}${logFile ? `; see ${logFile}` : ''}`,
      { cause },
    )
  }
}

/**
 * A role's process that the process supervisor gave up on (`gave-up`): it failed more often than
 * the supervision policy allows, or it said a restart cannot help. The message is one line: the
 * role, why, its last error and its log file.
 */
export class RoleGaveUpError extends Error {
  override name = 'RoleGaveUpError'
  constructor(
    /** The role: `learner`, `rollout`, ... */
    readonly role: string,
    /** `limit`: too many restarts; `not-restartable`: the process said a restart cannot help. */
    readonly reason: 'limit' | 'not-restartable',
    /** Its last error (from its failure line), else how it exited. */
    readonly lastError: string,
    /** Restarts made before giving up. */
    readonly restarts: number,
    /** The process's log file, when it has one. */
    readonly logFile?: string,
  ) {
    const why =
      reason === 'limit'
        ? `failed ${restarts + 1} times (the restart limit)`
        : 'failed and a restart cannot help'
    super(`the ${role} process ${why}: ${lastError}${logFile ? `; see ${logFile}` : ''}`)
  }
}
