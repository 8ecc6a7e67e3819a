import type { RunDir } from '../actors/index.ts'
import { RunNotAvailableError } from './errors.ts'
import type { ResolvedRecipe } from './task-catalog.ts'

/** How `triad run` asks for a run to be started. */
export interface StartRunOptions {
  /** NATS server URL(s) to join; absent: the embedded default (a local nats-server or in-process). */
  nats?: string
  /** True when `runDir` is an existing run being continued. */
  resume: boolean
  /** Where progress lines go (default stdout). */
  log?: (line: string) => void
}

/**
 * Runs a recipe end to end in `runDir`: SFT, then RL, evaluation and checkpoints, writing
 * `metrics.jsonl` through the metrics sink.
 * @throws RunNotAvailableError until the training pipeline is wired in.
 */
export async function startRun(
  _recipe: ResolvedRecipe,
  _runDir: RunDir,
  _options: StartRunOptions,
): Promise<void> {
  throw new RunNotAvailableError()
}
