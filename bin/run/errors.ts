/** Errors of a run's orchestration (`triad run`): resume, periodic evaluation. Each sets `name`. */

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
