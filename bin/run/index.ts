/**
 * A run's orchestration, what `triad run` does: start or resume a run (`startRun`, `resumeRecipe`),
 * its periodic and final evaluations, and the code version a run records. The run directory and
 * its lock, which the roles use too, are in `actors/run/`.
 */
export { codeVersion, shortCodeVersion } from './code-version.ts'
export { EvalProcessError, RecipeMismatchError, RunNotAvailableError } from './errors.ts'
export {
  evalRowLine,
  evaluateInProcess,
  heldOutSettings,
  interruptedEvaluations,
  periodicEvalName,
  pinnedCheckpointDir,
  startPeriodicEvaluation,
} from './periodic-evaluation.ts'
export { type RecipeDifference, recipeDifferences, resumeRecipe } from './resume.ts'
export {
  inProcessLine,
  type RunSummary,
  runBudgetOf,
  type StartRunOptions,
  startRun,
  UNBOUNDED_STEPS,
} from './run.ts'
