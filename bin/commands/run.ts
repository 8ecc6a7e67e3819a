import type { Command } from 'commander'
import type { MetricsLine } from '../../actors/index.ts'
import {
  appendRunLog,
  type Clock,
  createRunDir,
  NatsConnectError,
  NotARunDirError,
  openRunDir,
  RoleFailedError,
  type RunDir,
  RunFileExistsError,
  systemClock,
} from '../../actors/index.ts'
import type { ResolvedRecipe, TaskCatalog } from '../../recipes/index.ts'
import { CliError } from '../errors.ts'
import { LiveView } from '../monitor/live-view.ts'

/** Options of `prepareRun`. */
export interface PrepareRunOptions {
  /** An existing run directory to continue. */
  resume?: string
  /** Parent folder of new run directories (default `runs`). */
  runsDir?: string
  /** Tasks recipes may name (default: the built-in task registry, when present). */
  catalog?: TaskCatalog
  clock?: Clock
}

/** A validated recipe and the run directory it runs in. */
export interface PreparedRun {
  recipe: ResolvedRecipe
  dir: RunDir
  resumed: boolean
}

/**
 * `recipes/` loads the tensor library (for its closed sets of backends and estimators), so the CLI
 * imports it only when a `run` command needs it: other commands start faster.
 */
const recipes = () => import('../../recipes/index.ts')

/** Maps the errors of recipe loading and run directories to a `CliError` (message as is). */
export async function toCliError(err: unknown): Promise<unknown> {
  const r = await recipes()
  if (err instanceof r.RunNotAvailableError) return new CliError(err.message, { cause: err, exitCode: 2 })
  if (
    err instanceof r.RecipeError ||
    err instanceof r.RecipeLoadError ||
    err instanceof r.RecipeMismatchError ||
    err instanceof NotARunDirError ||
    err instanceof NatsConnectError ||
    err instanceof RunFileExistsError ||
    err instanceof RoleFailedError
  )
    return new CliError(err.message, { cause: err })
  return err
}

/**
 * Loads and validates a recipe file, checks its tasks against the catalog, and makes a new run
 * directory for it, or, with `resume`, opens that run and checks that the recipe matches the one
 * stored there (only the budget may change). No file of an existing run is overwritten; a resume
 * appends one line to `logs/run.jsonl`.
 * @throws RecipeLoadError, RecipeError, NotARunDirError, RecipeMismatchError.
 */
export async function prepareRun(recipeFile: string, options: PrepareRunOptions = {}): Promise<PreparedRun> {
  const { builtinTaskCatalog, loadRecipe, resumeRecipe } = await recipes()
  const clock = options.clock ?? systemClock
  const catalog = options.catalog ?? builtinTaskCatalog()
  const recipe = await loadRecipe(recipeFile, { catalog })
  if (options.resume) {
    const opened = await openRunDir(options.resume)
    const resumed = resumeRecipe(opened.recipe, recipe, { file: opened.dir.recipeFile, catalog })
    await appendRunLog(opened.dir, 'run', {
      event: 'resume',
      time: clock.now(),
      recipe: recipeFile,
      budget: resumed.budget,
    })
    return { recipe: resumed, dir: opened.dir, resumed: true }
  }
  const dir = await createRunDir({ runsDir: options.runsDir ?? 'runs', name: recipe.name, recipe, clock })
  await appendRunLog(dir, 'run', { event: 'start', time: clock.now(), recipe: recipeFile })
  return { recipe, dir, resumed: false }
}

/** `triad run RECIPE [--nats URL | --in-process] [--resume DIR] [--runs-dir DIR] [--check]`. */
export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run a recipe end to end (SFT, then RL with the dynamic triad) in a run directory')
    .argument('<recipe>', 'path to a recipe file (recipes/quickstart.ts)')
    .option(
      '--nats <url>',
      'join this NATS server or cluster (default: an embedded nats-server when one is on PATH, else one process)',
    )
    .option('--in-process', 'run learner and rollout in this process on the in-process transport (no NATS)')
    .option('--resume <dir>', 'continue the stopped run in this run directory')
    .option('--runs-dir <dir>', 'parent folder of new run directories', 'runs')
    .option('--check', 'validate the recipe, print it resolved as JSON, and stop (creates nothing)')
    .action(
      async (
        recipeFile: string,
        options: { nats?: string; inProcess?: boolean; resume?: string; runsDir: string; check?: boolean },
      ) => {
        if (options.nats && options.inProcess)
          throw new CliError(
            '--nats and --in-process exclude each other: a run is either over NATS or in one process',
          )
        const { builtinTaskCatalog, loadRecipe, startRun } = await recipes()
        try {
          if (options.check) {
            const recipe = await loadRecipe(recipeFile, { catalog: builtinTaskCatalog() })
            process.stdout.write(`${JSON.stringify(recipe, null, 2)}\n`)
            return
          }
          const run = await prepareRun(recipeFile, { resume: options.resume, runsDir: options.runsDir })
          process.stdout.write(
            `${JSON.stringify({ event: run.resumed ? 'run.resumed' : 'run.created', run: run.dir.id, dir: run.dir.path })}\n`,
          )
          const view = new LiveView({
            run: run.dir.id,
            maxSteps: run.recipe.budget.maxSteps,
            tty: process.stdout.isTTY === true,
          })
          try {
            await startRun(run.recipe, run.dir, {
              nats: options.nats,
              inProcess: options.inProcess,
              resume: run.resumed,
              onMetrics: (line) => view.add(line as MetricsLine),
              log: (line) => view.log(line),
            })
          } finally {
            view.stop()
          }
        } catch (err) {
          throw await toCliError(err)
        }
      },
    )
}
