/** The exit status of a usage error (unknown option or command, missing or bad argument). */
export const USAGE_EXIT_CODE = 2

/**
 * Errors of the command line. `CliError` is printed without a stack trace: its message is the
 * whole story for the user. `exitCode` is the process exit status.
 */
export class CliError extends Error {
  override name = 'CliError'
  readonly exitCode: number
  constructor(message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, { cause: options?.cause })
    this.exitCode = options?.exitCode ?? 1
  }
}

/** A subcommand whose implementation has not landed yet. */
export class NotAvailableError extends CliError {
  override name = 'NotAvailableError'
  constructor(what: string) {
    super(`'${what}' is not available yet in this version of triad`, { exitCode: 2 })
  }
}

/** A command line that cannot work as given (options that need each other, a bad value): exit status 2. */
export class UsageError extends CliError {
  override name = 'UsageError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: USAGE_EXIT_CODE })
  }
}
