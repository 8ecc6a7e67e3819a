import { mkdir } from 'node:fs/promises'
import { isAbsolute, relative } from 'node:path'
import type { Command } from 'commander'
import type { MetricsLine } from '../../actors/index.ts'
import {
  appendRunLog,
  ChaosUnavailableError,
  type Clock,
  checkSandboxesOf,
  connectNats,
  createRunDir,
  type FinishedRun,
  findFinishedRun,
  lockRunDir,
  NatsConnectError,
  NatsServerError,
  NotARunDirError,
  openRunDir,
  RoleFailedError,
  RoleGaveUpError,
  type RunDir,
  RunFileExistsError,
  type RunLock,
  RunLockedError,
  RunsDirError,
  RunWriteError,
  readSftDatasets,
  SandboxCheckError,
  SftDatasetError,
  systemClock,
} from '../../actors/index.ts'
import { checkBackendSettings } from '../../gpu/index.ts'
import type { ResolvedRecipe, TaskCatalog } from '../../recipes/index.ts'
import { CliError, UsageError } from '../errors.ts'
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
  /** Where the line about a stale lock taken over goes (default stdout). */
  log?: (line: string) => void
}

/** A validated recipe and the run directory it runs in, locked for this run. */
export interface ReadyRun {
  status: 'ready'
  recipe: ResolvedRecipe
  dir: RunDir
  resumed: boolean
  /** The run directory's lock: release it when the run ends. */
  lock: RunLock
}

/**
 * A resumed run with nothing left to do for this recipe's budget (`findFinishedRun`): nothing in
 * its directory was changed and no lock is held.
 */
export interface FinishedResume {
  status: 'finished'
  recipe: ResolvedRecipe
  dir: RunDir
  resumed: true
  finished: FinishedRun
}

/** What `prepareRun` made ready, or found finished. */
export type PreparedRun = ReadyRun | FinishedResume

/** The line `triad run --resume` prints for a finished run: its step, budget and final evaluation file. */
export function finishedLine(dir: RunDir, finished: FinishedRun): string {
  // Relative to the working directory when it is below it (runs/...), else absolute.
  const shown = (file: string) => {
    const rel = relative(process.cwd(), file)
    return rel.startsWith('..') || isAbsolute(rel) ? file : rel
  }
  const evaluated = finished.evalFile
    ? `its final evaluation is ${shown(finished.evalFile)}`
    : 'the recipe has no final evaluation (evaluation.k 0)'
  return `run ${dir.id} is finished: step ${finished.step} reached the step budget of ${finished.maxSteps} and ${evaluated}; nothing to do (raise budget.maxSteps in the recipe to train further)`
}

/**
 * The first line `triad run` prints: `run <id> started in <dir>` for a new run, `run <id> resumed
 * in <dir>` for a resumed one (the directory absolute). The machine-readable record of the same
 * event is the `start` or `resume` line of the run's `logs/run.jsonl`.
 */
export function startedLine(dir: RunDir, resumed: boolean): string {
  return `run ${dir.id} ${resumed ? 'resumed' : 'started'} in ${dir.path}`
}

/** The exit code of a run stopped by a signal: 128 + the signal's number (SIGINT 2, SIGTERM 15). */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const

/**
 * `recipes/` loads the tensor library (for its closed sets of backends and estimators), so the CLI
 * imports it only when a `run` command needs it: other commands start faster.
 */
const recipes = async () => ({
  ...(await import('../../recipes/index.ts')),
  ...(await import('../run/index.ts')),
  ...(await import('../ablation/index.ts')),
})

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
    err instanceof RunsDirError ||
    err instanceof RunLockedError ||
    err instanceof RoleFailedError ||
    err instanceof RoleGaveUpError ||
    err instanceof SandboxCheckError ||
    err instanceof SftDatasetError ||
    err instanceof NatsServerError ||
    err instanceof RunWriteError ||
    err instanceof ChaosUnavailableError
  )
    return new CliError(err.message, { cause: err })
  return err
}

/**
 * Loads and validates a recipe file, checks its tasks against the catalog, and makes a new run
 * directory for it, or, with `resume`, opens that run and checks that the recipe matches the one
 * stored there (only the budget may change). Either way the run directory is locked
 * (`lockRunDir`: one run at a time; a stale lock is taken over with a line to `log`). A resumed
 * run whose step budget is reached and whose final evaluation is written is returned as
 * `finished`, with nothing changed and no lock held. No file of an existing run is overwritten; a
 * resume appends one line to `logs/run.jsonl`.
 * Before any of that, the code sandbox of every task that declares one gets its start check
 * (`checkSandboxesOf`).
 * @throws RecipeLoadError, RecipeError, NotARunDirError, RecipeMismatchError; RunLockedError
 *   (nothing changed) when another run holds the directory; SandboxCheckError (nothing made or
 *   changed) for a sandbox that fails its check; SftDatasetError (nothing made) for a new run
 *   whose `sft.datasets` has a bad row.
 */
export async function prepareRun(recipeFile: string, options: PrepareRunOptions = {}): Promise<PreparedRun> {
  const { builtinTaskCatalog, codeVersion, loadRecipe, machine, machineOf, resumeRecipe } = await recipes()
  // What the run is made with, for its report: the code's commit and this machine.
  const made = () => ({ code: codeVersion(), machine: machineOf(machine()) })
  const clock = options.clock ?? systemClock
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`))
  const catalog = options.catalog ?? builtinTaskCatalog()
  const recipe = await loadRecipe(recipeFile, { catalog })
  // Before the run directory is made or touched: a backend or thread count this machine cannot
  // give (TRIAD_BACKEND, TRIAD_THREADS, model.threads) is one line, not roles that restart on it.
  checkBackendSettings(recipeThreads(recipe))
  // A task's code sandbox that fails its check
  // (unreachable, an HTTP error, garbage) ends the run here with one line naming its URL.
  await checkSandboxesOf(recipe.tasks.map((t) => t.name))
  if (options.resume) {
    const opened = await openRunDir(options.resume, { create: false })
    const { dir } = opened
    const resumed = resumeRecipe(opened.recipe, recipe, { file: dir.recipeFile, catalog })
    const lock = await lockRunDir(dir.path, { log, clock })
    try {
      const finished = await findFinishedRun(dir, {
        maxSteps: resumed.budget.maxSteps,
        evaluates: resumed.evaluation.k > 0,
      })
      if (finished) {
        await lock.release()
        return { status: 'finished', recipe: resumed, dir, resumed: true, finished }
      }
      for (const sub of [dir.checkpointsDir, dir.evalDir, dir.logsDir]) await mkdir(sub, { recursive: true })
      await appendRunLog(dir, 'run', {
        event: 'resume',
        time: clock.now(),
        recipe: recipeFile,
        ...made(),
        budget: resumed.budget,
        ...(lock.tookOver ? { staleLock: lock.tookOver } : {}),
      })
    } catch (err) {
      await lock.release()
      throw err
    }
    return { status: 'ready', recipe: resumed, dir, resumed: true, lock }
  }
  // A new run's SFT datasets are read through once here, so a bad row ends it before the run
  // directory is made (the learner checks them again before its SFT).
  if (recipe.sft.epochs > 0) await readSftDatasets(recipe.sft.datasets)
  const dir = await createRunDir({ runsDir: options.runsDir ?? 'runs', name: recipe.name, recipe, clock })
  const lock = await lockRunDir(dir.path, { log, clock })
  await appendRunLog(dir, 'run', { event: 'start', time: clock.now(), recipe: recipeFile, ...made() })
  return { status: 'ready', recipe, dir, resumed: false, lock }
}

/** The recipe's per-role thread counts by their field names, for `checkBackendSettings`. */
function recipeThreads(recipe: ResolvedRecipe): Record<string, number | string> {
  return {
    'model.threads.learner': recipe.model.threads.learner,
    'model.threads.rollout': recipe.model.threads.rollout,
  }
}

/**
 * Connects to the NATS server(s) at `url` and closes the connection: a run that is to join them
 * fails before it creates or changes anything when they do not answer.
 * @throws NatsConnectError naming the URL.
 */
export async function checkNats(url: string): Promise<void> {
  const transport = await connectNats({ servers: url, run: 'check', role: 'run', id: String(process.pid) })
  await transport.close()
}

/** `--chaos <seconds>`: a positive number of seconds. @throws UsageError otherwise. */
function parseChaosSeconds(text: string): number {
  const n = Number(text)
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`--chaos wants a positive number of seconds between two kills, got '${text}'`)
  return n
}

/** `--chaos-seed <n>`: an integer. @throws UsageError otherwise. */
function parseChaosSeed(text: string): number {
  const n = Number(text)
  if (!Number.isSafeInteger(n)) throw new UsageError(`--chaos-seed wants an integer, got '${text}'`)
  return n
}

/** `triad run RECIPE [--nats URL | --in-process] [--resume DIR] [--runs-dir DIR] [--sft-only] [--check] [--chaos SECONDS [--chaos-seed N]]`. */
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
    .option(
      '--sft-only',
      'stop after the cold start (tokenizer, SFT, reward-model cold start) and evaluate the SFT checkpoint; a resume trains RL from there',
    )
    .option('--check', 'validate the recipe, print it resolved as JSON, and stop (creates nothing)')
    .option(
      '--chaos <seconds>',
      'chaos mode: SIGKILL a random role (learner, rollout, the embedded nats-server) every this many seconds, through the whole run; the end prints the kills, the restarts and the group audit',
      parseChaosSeconds,
    )
    .option('--chaos-seed <n>', "seed of the chaos schedule (default: the recipe's seed)", parseChaosSeed)
    .action(
      async (
        recipeFile: string,
        options: {
          nats?: string
          inProcess?: boolean
          resume?: string
          runsDir: string
          sftOnly?: boolean
          check?: boolean
          chaos?: number
          chaosSeed?: number
        },
      ) => {
        if (options.chaos !== undefined && options.inProcess)
          throw new UsageError(
            '--chaos and --in-process exclude each other: chaos mode kills role processes, and one process has none',
          )
        if (options.chaosSeed !== undefined && options.chaos === undefined)
          throw new UsageError('--chaos-seed needs --chaos')
        if (options.nats && options.inProcess)
          throw new UsageError(
            '--nats and --in-process exclude each other: a run is either over NATS or in one process',
          )
        const { builtinTaskCatalog, loadRecipe, sftSizes, startRun } = await recipes()
        try {
          if (options.check) {
            const recipe = await loadRecipe(recipeFile, { catalog: builtinTaskCatalog() })
            checkBackendSettings(recipeThreads(recipe))
            // The cold start it will run: the experts' trajectories only with sft.experts, and the
            // rows of sft.datasets, read through here (a bad row is refused as the run would).
            const rows = recipe.sft.epochs > 0 ? (await readSftDatasets(recipe.sft.datasets)).length : 0
            const checked = { ...recipe, derived: { ...recipe.derived, ...sftSizes(recipe, rows) } }
            process.stdout.write(`${JSON.stringify(checked, null, 2)}\n`)
            return
          }
          // Before the run directory is made or touched: a dead NATS URL leaves nothing behind.
          if (options.nats) await checkNats(options.nats)
          const run = await prepareRun(recipeFile, { resume: options.resume, runsDir: options.runsDir })
          if (run.status === 'finished') {
            process.stdout.write(`${finishedLine(run.dir, run.finished)}\n`)
            return
          }
          process.stdout.write(`${startedLine(run.dir, run.resumed)}\n`)
          const view = new LiveView({
            run: run.dir.id,
            maxSteps: run.recipe.budget.maxSteps,
            maxMinutes: run.recipe.budget.maxMinutes,
            tty: process.stdout.isTTY === true,
          })
          try {
            const summary = await startRun(run.recipe, run.dir, {
              nats: options.nats,
              inProcess: options.inProcess,
              resume: run.resumed,
              sftOnly: options.sftOnly === true,
              ...(options.chaos !== undefined
                ? { chaos: { everyS: options.chaos, seed: options.chaosSeed ?? run.recipe.seed } }
                : {}),
              onMetrics: (line) => view.add(line as MetricsLine),
              log: (line) => view.log(line),
            })
            // The files a user reads next: the final evaluation, and the report to make.
            if (summary.evalFile)
              view.log(`final evaluation in ${summary.evalFile}; triad report ${run.dir.path} draws the run`)
            // Interrupted after the clean stop: 128 + the signal's number, as shells report it.
            if (summary.signal) process.exitCode = SIGNAL_EXIT_CODES[summary.signal]
          } finally {
            view.stop()
            // A run stopped by SIGINT or SIGTERM gets here too (startRun returns); SIGKILL leaves
            // a stale lock that the next run takes over.
            await run.lock.release()
          }
          // Stopped by a signal during the final evaluation: the evaluation still computing in
          // this process is dropped (the resume evaluates again); nothing else is left to wait for.
          if (process.exitCode === SIGNAL_EXIT_CODES.SIGINT || process.exitCode === SIGNAL_EXIT_CODES.SIGTERM)
            process.exit()
        } catch (err) {
          throw await toCliError(err)
        }
      },
    )
}
