/** One problem found in a recipe: the dotted field path (`rl.eps_high`, `tasks[1].weight`) and what is wrong. */
export interface RecipeIssue {
  path: string
  message: string
}

/** Formats issues as `path: message` lines. */
export function formatIssues(issues: readonly RecipeIssue[]): string {
  return issues.map((i) => `${i.path || '(recipe)'}: ${i.message}`).join('\n')
}

/**
 * A recipe that does not validate. `issues` lists every problem with its field path; the message
 * starts with them, one per line, e.g. `rl.eps_high: must be > 0`.
 */
export class RecipeError extends Error {
  override name = 'RecipeError'
  readonly issues: readonly RecipeIssue[]
  /** The recipe file, when the recipe came from one. */
  readonly file?: string
  /**
   * The value that was validated, when known (else undefined): a caller that knows more (the task catalog, when
   * `defineRecipe` threw while a recipe file was imported) checks it again to report every problem
   * at once.
   */
  readonly value?: unknown
  constructor(issues: readonly RecipeIssue[], options?: { file?: string; cause?: unknown; value?: unknown }) {
    const where = options?.file ? `invalid recipe ${options.file}:\n` : 'invalid recipe:\n'
    super(`${where}${formatIssues(issues)}`, { cause: options?.cause })
    this.issues = issues
    this.file = options?.file
    this.value = options?.value
  }
}

/** A recipe file that cannot be loaded: missing, failing to import, or without a default export. */
export class RecipeLoadError extends Error {
  override name = 'RecipeLoadError'
  constructor(
    readonly file: string,
    reason: string,
    cause?: unknown,
  ) {
    super(`cannot load recipe ${file}: ${reason}`, { cause })
  }
}

/** `startRun` before the training pipeline is wired in. */
export class RunNotAvailableError extends Error {
  override name = 'RunNotAvailableError'
  constructor(reason = 'starting a run is not available here') {
    super(reason)
  }
}

/**
 * The recipe given to `--resume` differs from the run's stored `recipe.json` in settings other
 * than the budget.
 */
export class RecipeMismatchError extends Error {
  override name = 'RecipeMismatchError'
  constructor(
    readonly file: string,
    readonly differences: readonly { path: string; stored: unknown; current: unknown }[],
  ) {
    super(
      `the recipe differs from ${file}, which the run was started with (only budget may change on resume):\n${differences
        .map((d) => `${d.path}: ${JSON.stringify(d.stored)} in the run, ${JSON.stringify(d.current)} now`)
        .join('\n')}`,
    )
  }
}

/** A field path (`triad ablate --vary FIELD=...`) that names no field of the recipe, or is malformed. */
export class RecipeFieldError extends Error {
  override name = 'RecipeFieldError'
  constructor(
    readonly path: string,
    reason: string,
  ) {
    // An empty or blank path is shown quoted, so that the message still names it.
    super(`${/^\S+$/.test(path) ? path : JSON.stringify(path)} ${reason}`)
  }
}

/**
 * A `triad ablate` request that cannot be run as given (a bad `--vary`, a value the recipe schema
 * refuses, an output folder holding another ablation). Nothing was run.
 */
export class AblationInputError extends Error {
  override name = 'AblationInputError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}

/**
 * The `triad eval` process of a periodic evaluation exited with a failure (not on a write error,
 * and not stopped by the run's stop); its log file, named in the message, says why.
 */
export class EvalProcessError extends Error {
  override name = 'EvalProcessError'
  constructor(
    message: string,
    /** The process's log file. */
    readonly logFile: string,
  ) {
    super(message)
  }
}
