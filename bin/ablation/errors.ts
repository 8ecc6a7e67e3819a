/** Errors of the ablation runner (`triad ablate`). */

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
