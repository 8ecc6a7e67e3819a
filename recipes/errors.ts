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
