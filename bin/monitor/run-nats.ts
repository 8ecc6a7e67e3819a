import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readRunTransport, runDirPaths } from '../../actors/index.ts'
import { checkToken } from '../../protocols/index.ts'
import { CliError, UsageError } from '../errors.ts'

/** The NATS URL `triad monitor` and `triad status` use when neither `--nats` nor a run says otherwise. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222'

/** Where to reach a run's NATS server, and how that was decided. */
export interface RunNats {
  /** NATS server URL(s). */
  url: string
  /** The server's monitoring URL, when `triad run` recorded one (its embedded server) for this URL. */
  monitor?: string
  /**
   * Where `url` comes from, for messages: `--nats`, `recorded by triad run in <runs>/<run>/logs/run.jsonl`,
   * or `the default URL`.
   */
  source: string
}

/**
 * The NATS server of run `run`: `nats` when given (with the recorded monitoring URL when the run
 * recorded that same server); else the server `triad run` recorded in `<runsDir>/<run>/logs/run.jsonl`
 * (its embedded server listens on a free port, so the default URL would miss it). Without a run:
 * `nats`, else `DEFAULT_NATS_URL`. A run recorded as one process on the in-process transport has
 * no server: `triad monitor` and `triad status` refuse it first (`attachRunNats`).
 * @throws UsageError (exit 2) when `run` is given without `nats` and there is no run directory
 *   `<runsDir>/<run>`; CliError when its `logs/run.jsonl` records no server. Either way asking the
 *   default server would answer for another server's runs.
 */
export async function runNats(
  runsDir: string,
  run: string | undefined,
  nats: string | undefined,
): Promise<RunNats> {
  const dir = run === undefined ? undefined : runDirPaths(join(runsDir, run))
  const recorded = dir ? await readRunTransport(dir.path) : undefined
  const recordedUrl = recorded?.transport === 'nats' ? recorded.url : undefined
  if (nats !== undefined)
    return {
      url: nats,
      source: '--nats',
      ...(nats === recordedUrl && recorded?.monitor ? { monitor: recorded.monitor } : {}),
    }
  if (dir && recordedUrl)
    return {
      url: recordedUrl,
      source: `recorded by triad run in ${join(dir.logsDir, 'run.jsonl')}`,
      ...(recorded?.monitor ? { monitor: recorded.monitor } : {}),
    }
  if (dir) {
    const known = existsSync(dir.path)
    const where = known
      ? `${join(dir.logsDir, 'run.jsonl')} records no NATS server`
      : `there is no run directory ${dir.path}`
    const message = `cannot find the NATS server of run ${run}: ${where}; pass --runs-dir with the folder that holds the run directory, or --nats with the URL triad run printed`
    // No such run is a bad argument; a run that recorded no server is a run that could not start.
    throw known ? new CliError(message) : new UsageError(message)
  }
  return { url: DEFAULT_NATS_URL, source: 'the default URL' }
}

/**
 * What to add to "cannot connect to NATS at URL" for a URL that was not given with `--nats`: a
 * recorded URL belongs to a run that may have ended; the default URL may not be where the run is.
 */
export function connectHint(nats: RunNats): string {
  if (nats.source === '--nats') return ''
  if (nats.source === 'the default URL')
    return ' (the default URL: triad run without --nats serves a run on its own nats-server; pass --run RUN where its run directory is, or --nats with the URL triad run printed)'
  return ` (${nats.source}; has the run ended?)`
}

/**
 * The step budget in `<runsDir>/<run>/recipe.json` (`budget.maxSteps`), when that file is here and
 * has one: the end of the monitor's progress bar until the run's `run/max_steps` report arrives.
 */
export async function recipeMaxSteps(runsDir: string, run: string): Promise<number | undefined> {
  try {
    const recipe = JSON.parse(await readFile(runDirPaths(join(runsDir, run)).recipeFile, 'utf8')) as {
      budget?: { maxSteps?: unknown }
    }
    const n = recipe?.budget?.maxSteps
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined
  } catch {
    return undefined
  }
}

/**
 * The NATS server that `command` (`triad monitor`, `triad status`) attaches to for run `run`
 * (`runNats`), after the checks both make on `--run`: it is a valid run id, and not a run that
 * `triad run` started in one process (`inProcessRunError`). Without a run, only `runNats`.
 * @throws UsageError for an invalid run id; CliError for a run on the in-process transport.
 */
export async function attachRunNats(
  command: string,
  runsDir: string,
  run: string | undefined,
  nats: string | undefined,
): Promise<RunNats> {
  if (run !== undefined) {
    try {
      checkToken(run, 'run id')
    } catch (err) {
      throw new UsageError((err as Error).message, { cause: err })
    }
    const refused = await inProcessRunError(runsDir, run, command)
    if (refused) throw refused
  }
  return runNats(runsDir, run, nats)
}

/**
 * The error for a run that `command` (`triad monitor`, `triad status`) cannot attach to: one that
 * `triad run` started in one process on the in-process transport (its `logs/run.jsonl` says so),
 * whose metrics and actors never leave that process. Undefined for any other run, or when
 * `<runsDir>/<run>` is not here.
 */
async function inProcessRunError(
  runsDir: string,
  run: string,
  command: string,
): Promise<CliError | undefined> {
  const dir = runDirPaths(join(runsDir, run))
  const transport = await readRunTransport(dir.path)
  if (transport?.transport !== 'in-process') return undefined
  return new CliError(
    `run ${run} runs in one process on the in-process transport, so ${command} cannot attach to it: ` +
      `its live view is in the terminal of triad run, its metrics in ${dir.metricsFile} ` +
      `(triad report ${dir.path} charts them). Start a run with nats-server on PATH, or with --nats URL, to ` +
      'watch it from another process or machine.',
  )
}
