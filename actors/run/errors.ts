/** A path given as a run directory that is not one (missing, not a directory, or no `recipe.json`). */
export class NotARunDirError extends Error {
  override name = 'NotARunDirError'
  constructor(
    readonly path: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`${path} is not a triad run directory (${reason})`, { cause })
  }
}

/** A run file that already exists and would be overwritten. Nothing of an existing run is replaced. */
export class RunFileExistsError extends Error {
  override name = 'RunFileExistsError'
  constructor(
    readonly path: string,
    cause?: unknown,
  ) {
    super(`${path} already exists; triad never overwrites a run's files`, { cause })
  }
}

/** A line of `metrics.jsonl` or a file under `eval/` that does not parse. */
export class RunFileFormatError extends Error {
  override name = 'RunFileFormatError'
  constructor(
    readonly path: string,
    readonly detail: string,
    cause?: unknown,
  ) {
    super(`${path}: ${detail}`, { cause })
  }
}
