/**
 * The exit statuses of every triad command (the README's "Commands" table): 0 done; 1 a failure
 * of the work itself (a server that does not answer, a role that failed, a file that cannot be
 * written); 2 a usage error (an unknown option or command, a missing or bad argument or option
 * value, a recipe file that is missing or that the schema refuses, a path that is not what the
 * command takes); 3 `triad monitor` lost its NATS server; 130 and 143 stopped by SIGINT and
 * SIGTERM (128 + the signal's number).
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  serverGone: 3,
  SIGINT: 130,
  SIGTERM: 143,
} as const

/** The exit status of a usage error (unknown option or command, missing or bad argument). */
export const USAGE_EXIT_CODE = ExitCode.usage

/**
 * Errors of the command line. `CliError` is printed without a stack trace: its message is the
 * whole story for the user. `exitCode` is the process exit status.
 */
export class CliError extends Error {
  override name = 'CliError'
  readonly exitCode: number
  constructor(message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, { cause: options?.cause })
    this.exitCode = options?.exitCode ?? ExitCode.failure
  }
}

/** A subcommand whose implementation has not landed yet. */
export class NotAvailableError extends CliError {
  override name = 'NotAvailableError'
  constructor(what: string) {
    super(`'${what}' is not available yet in this version of triad`, { exitCode: ExitCode.usage })
  }
}

/** A command line that cannot work as given (options that need each other, a bad value): exit status 2. */
export class UsageError extends CliError {
  override name = 'UsageError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: USAGE_EXIT_CODE })
  }
}

/**
 * The errors of the layers below the command line that say the user's input is wrong (`name` of
 * each class), whichever command meets them: the recipe file (missing or not loadable, refused by
 * the schema, not the one a resumed run started with, an `--vary` field it lacks, an ablation
 * plan that cannot be), an SFT dataset row the recipe's `sft.datasets` names, a path that is not a
 * run directory, a task name no registry holds, a task file that is missing or does not load. Matched by name so that the command line need
 * not load `recipes/` (and its tensor library) to tell them.
 */
export const BAD_INPUT_ERRORS: readonly string[] = [
  'RecipeError',
  'RecipeLoadError',
  'RecipeMismatchError',
  'RecipeFieldError',
  'AblationInputError',
  'SftDatasetError',
  'NotARunDirError',
  'UnknownTaskError',
  'TaskFileError',
]

/** Whether `err` or an error in its `cause` chain is one of `BAD_INPUT_ERRORS`. */
export function isBadInput(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++)
    if (BAD_INPUT_ERRORS.includes(e.name)) return true
  return false
}

/**
 * The exit status of a `CliError` at the end of a command: 2 when it, or what caused it, is bad
 * input (`UsageError`, `isBadInput`), else its own `exitCode`.
 */
export function exitCodeOf(err: CliError): number {
  return err.exitCode === ExitCode.failure && isBadInput(err) ? ExitCode.usage : err.exitCode
}

/**
 * A message on one line, as a usage error is printed: its lines joined with `; ` (after a line
 * that ends with `:`, with a space), blank lines and surrounding spaces dropped.
 *   `invalid recipe r.ts:\nbudget.maxSteps: must be >= 1\nseed: ...` -> `invalid recipe r.ts: budget.maxSteps: must be >= 1; seed: ...`
 */
export function oneLine(message: string): string {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  let out = lines[0] ?? ''
  for (let i = 1; i < lines.length; i++) out += `${lines[i - 1]!.endsWith(':') ? ' ' : '; '}${lines[i]}`
  return out
}
