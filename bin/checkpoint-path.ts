import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { latestRunCheckpoint, runDirPaths } from '../actors/index.ts'
import { CliError, UsageError } from './errors.ts'

/** How a command that takes a model names what it does with it, for its lines. */
export interface CheckpointUse {
  /** What a model directory is called in the error: `a checkpoint`, `a model directory`. */
  what: string
  /** The verb of the progress line: `evaluating`, `serving`. */
  doing: string
  /** The verb of the hint: `evaluate`, `serve`. */
  todo: string
}

/**
 * The model directory a command reads for PATH: a triad checkpoint or a Hugging Face directory
 * (either holds `config.json`) as it is; a run directory (it holds `recipe.json`) as its newest
 * checkpoint (`latestRunCheckpoint`), said in one `log` line.
 * @throws CliError for a run without checkpoints; UsageError (exit 2) for a path that is neither,
 *   with an example of a checkpoint path.
 */
export function resolveCheckpointPath(path: string, use: CheckpointUse, log: (line: string) => void): string {
  if (existsSync(join(path, 'config.json'))) return path
  const run = runDirPaths(path)
  if (existsSync(run.recipeFile)) {
    const latest = latestRunCheckpoint(path)
    if (!latest)
      throw new CliError(
        `${path} is a run directory without a checkpoint yet (${run.checkpointsDir} holds no step-N/ or sft/ with a config.json)`,
      )
    log(
      `${path} is a run directory: ${use.doing} its latest checkpoint ${latest.dir} (${latest.name === 'sft' ? 'the cold-start SFT' : `learner step ${latest.step}`})`,
    )
    return latest.dir
  }
  throw new UsageError(
    `${path} is neither ${use.what} (no config.json) nor a run directory (no recipe.json): pass a checkpoint such as runs/<run>/checkpoints/step-50, or a run directory to ${use.todo} its latest checkpoint`,
  )
}
