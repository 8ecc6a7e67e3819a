import { join } from 'node:path'
import type { Command } from 'commander'
import {
  ALL_RUNS_METRICS,
  type Clock,
  connectNats,
  type MetricsLine,
  metricsWildcard,
  NatsConnectError,
  type NatsTransport,
  RUN_ENDED,
  RUN_FINISHED,
  RUN_MAX_STEPS,
  type Served,
  systemClock,
  type Transport,
} from '../../actors/index.ts'
import { MessageRegistry, MetricsReport } from '../../protocols/index.ts'
import { CliError } from '../errors.ts'
import { endedRunJson, findEndedRun } from '../monitor/ended-run.ts'
import { formatDuration, MetricsState, renderSnapshot } from '../monitor/metrics-state.ts'
import { attachRunNats, connectHint, type RunNats, recipeMaxSteps } from '../monitor/run-nats.ts'
import { watchRunsSeen } from '../monitor/runs-seen.ts'
import { serviceRestarts } from '../monitor/service-restarts.ts'
import { integerOption } from '../numeric-option.ts'

const accepts = new MessageRegistry([MetricsReport])

/** Feeds every `metrics.report` of a run (`triad.<run>.metrics.>`) into `state`, then to `onLine`. */
export function watchMetrics(
  transport: Transport,
  run: string,
  state: MetricsState,
  onLine?: (line: MetricsLine) => void,
): Served {
  return transport.subscribe(metricsWildcard(run), {
    accepts,
    handler: (message) => {
      const line = message.payload as MetricsLine
      state.add(line)
      onLine?.(line)
    },
  })
}

/**
 * How a run's last report says it ended (`run/ended` 1 from role `run`, `ProcessRestartReport`):
 * `finished` when at its step or time budget; undefined for any other line.
 */
export function runEnd(line: MetricsLine): { finished: boolean; step: number; time: number } | undefined {
  if (line.role !== 'run' || line.values[RUN_ENDED] !== 1) return undefined
  return { finished: line.values[RUN_FINISHED] === 1, step: line.step, time: line.time }
}

/** Exit statuses of the live `triad monitor` (closed set). */
export const MonitorExit = {
  /** The run finished at its budget, or the monitor was stopped (SIGINT, SIGTERM). */
  finished: 0,
  /** The run stopped before its budget (interrupted or failed). */
  stopped: 1,
  /** The NATS server went away and did not come back within `--server-timeout`. */
  serverGone: 3,
} as const

/** What `triad monitor --once --json` prints: the snapshot's numbers (times in ms since the epoch). */
export interface MonitorSnapshot {
  run: string
  /** Highest learner step reported. */
  step: number
  /** End of the progress bar: `--max-steps`, the run's `run/max_steps`, or its recipe's budget. */
  max_steps: number | null
  reports: number
  first_time: number | null
  last_time: number | null
  /** The run's last report said it ended (`run/ended`); `finished`: at its budget. */
  ended: boolean
  finished: boolean | null
  /** Actor restarts from the run's NATS services (null when none answered). */
  service_restarts: number | null
  /** The newest value of every key, the mean over the actors that report it. */
  metrics: Record<string, number>
}

/** The numbers of a snapshot for scripts (`MonitorSnapshot`). */
export function snapshotJson(
  state: MetricsState,
  o: {
    run: string
    maxSteps?: number
    budgetMaxSteps?: number
    serviceRestarts?: number
    end?: { finished: boolean }
  },
): MonitorSnapshot {
  const metrics: Record<string, number> = {}
  for (const key of state.keys()) {
    const v = state.value(key)
    if (v !== undefined) metrics[key] = v
  }
  return {
    run: o.run,
    step: state.step,
    max_steps: o.maxSteps ?? state.value(RUN_MAX_STEPS) ?? o.budgetMaxSteps ?? null,
    reports: state.reports,
    first_time: state.firstTime ?? null,
    last_time: state.lastTime ?? null,
    ended: o.end !== undefined,
    finished: o.end ? o.end.finished : null,
    service_restarts: o.serviceRestarts ?? null,
    metrics,
  }
}

/** How long the live monitor waits for a first report before it lists the runs it saw instead, ms. */
export const NO_METRICS_HINT_MS = 5_000

/** What the monitor says about the runs seen on a server while its run published nothing. */
function seenLine(where: string, seen: readonly string[]): string {
  return seen.length
    ? `runs that published metrics on ${ALL_RUNS_METRICS} at ${where} meanwhile: ${seen.join(', ')}`
    : `no run published metrics at ${where} meanwhile (triad run without --nats starts its own nats-server and records its URL in the run directory: run triad monitor where that is, with --runs-dir, or pass the URL it printed with --nats)`
}

/**
 * The live monitor's text while no report of `run` has arrived: where it waits (subjects, URL and
 * where the URL came from) and, from `NO_METRICS_HINT_MS` on, how long it has waited and the runs
 * that published metrics on that server meanwhile (or that none did).
 */
export function waitingText(o: {
  run: string
  nats: RunNats
  elapsedMs: number
  seen: readonly string[]
}): string {
  const lines = [
    `run ${o.run}: waiting for metrics on ${metricsWildcard(o.run)} at ${o.nats.url} (${o.nats.source})`,
  ]
  if (o.elapsedMs >= NO_METRICS_HINT_MS)
    lines.push(`nothing from run ${o.run} in ${formatDuration(o.elapsedMs)}; ${seenLine(o.nats.url, o.seen)}`)
  return `${lines.join('\n')}\n`
}

/** Options of `monitorOnce`. */
export interface MonitorOnceOptions {
  run: string
  /** The server's URL, for the error when nothing arrives (default: not named). */
  url?: string
  /** How long to collect reports before rendering, ms. */
  waitMs: number
  maxSteps?: number
  /** End of the progress bar when no `run/max_steps` report arrived (the run directory's recipe). */
  budgetMaxSteps?: number
  clock?: Clock
  /** Reads the run's actor restarts (from the NATS services); called once after the window. */
  restarts?: () => Promise<number | undefined>
  /** Print `snapshotJson` (one JSON object) instead of the text view. */
  json?: boolean
}

/**
 * Collects a run's metrics for `waitMs` and renders one snapshot.
 * @throws CliError when no report arrived in that time, naming the runs that did publish metrics
 *   on that server meanwhile (or saying that none did).
 */
export async function monitorOnce(transport: Transport, options: MonitorOnceOptions): Promise<string> {
  const clock = options.clock ?? systemClock
  const state = new MetricsState()
  let end: { finished: boolean } | undefined
  const sub = watchMetrics(transport, options.run, state, (line) => {
    end = runEnd(line) ?? end
  })
  const seen = watchRunsSeen(transport)
  await new Promise<void>((resolve) => clock.setTimeout(resolve, options.waitMs))
  await sub.stop()
  await seen.stop()
  if (state.reports === 0) {
    const where = options.url ?? 'this server'
    throw new CliError(
      `no metrics on ${metricsWildcard(options.run)} at ${where} within ${options.waitMs} ms; is run '${options.run}' running? ` +
        `${seenLine(where, seen.runs())}. A run in one process on the in-process transport cannot be watched from outside it.`,
    )
  }
  const restarts = await options.restarts?.()
  if (options.json)
    return `${JSON.stringify(
      snapshotJson(state, {
        run: options.run,
        maxSteps: options.maxSteps,
        budgetMaxSteps: options.budgetMaxSteps,
        serviceRestarts: restarts,
        end,
      }),
    )}\n`
  const ended = end ? `run ${options.run} ${end.finished ? 'finished' : 'stopped before its budget'}\n` : ''
  return (
    renderSnapshot(state, {
      run: options.run,
      maxSteps: options.maxSteps,
      budgetMaxSteps: options.budgetMaxSteps,
      serviceRestarts: restarts,
    }) + ended
  )
}

/**
 * Resolves when the connection's server has been unreachable for `timeoutMs` in a row (from its
 * first disconnect, until a reconnect), or when the connection closed.
 */
function serverGone(transport: NatsTransport, timeoutMs: number) {
  let timer: NodeJS.Timeout | undefined
  let done = false
  let since = 0
  const promise = new Promise<{ goneForMs: number }>((resolve) => {
    void (async () => {
      for await (const s of transport.nc.status()) {
        if (done) return
        if (s.type === 'disconnect' && !timer) {
          since = Date.now()
          timer = setTimeout(() => resolve({ goneForMs: Date.now() - since }), timeoutMs)
        } else if (s.type === 'reconnect') {
          clearTimeout(timer)
          timer = undefined
        }
      }
    })().catch(() => undefined)
    void transport.nc.closed().then(() => {
      if (!done) resolve({ goneForMs: since ? Date.now() - since : 0 })
    })
  })
  return {
    promise,
    stop: () => {
      done = true
      clearTimeout(timer)
    },
  }
}

/**
 * `triad monitor --run RUN [--runs-dir DIR] [--nats URL] [--once [--json]]`: a live terminal view
 * of a run's metrics. Without `--nats` it reads the run's NATS URL from
 * `<runs-dir>/<run>/logs/run.jsonl` (an embedded server listens on a free port) and refuses a run
 * that recorded none. A run whose run directory says it ended (`findEndedRun`) gets one line of how
 * (status 0), without NATS. The live view ends by itself: when the run's last report says it ended
 * (status 0 when it finished at its budget, 1 when it stopped before), or when the server stays
 * unreachable for `--server-timeout` ms (status 3).
 */
export function registerMonitor(program: Command): void {
  program
    .command('monitor')
    .description(
      "live view of a run's metrics: progress, success and reward per task, tokens/s, staleness, restarts",
    )
    .requiredOption('--run <run>', 'run id (the run directory name, e.g. quickstart-20261129-182157)')
    .option(
      '--nats <url>',
      'NATS server URL(s) (default: the URL triad run recorded in the run directory, else nats://127.0.0.1:4222)',
    )
    .option(
      '--runs-dir <dir>',
      'where triad run made the run directory (its NATS URL, its step budget, a one-process run)',
      'runs',
    )
    .option('--once', 'print one snapshot after --wait ms and exit')
    .option('--json', 'with --once: print the snapshot as one JSON object (for scripts)')
    .option(
      '--server-timeout <ms>',
      'how long the NATS server may be unreachable before the live view exits (status 3)',
      integerOption({ min: 1 }),
      5_000,
    )
    .option('--wait <ms>', 'with --once: how long to collect metrics', integerOption({ min: 1 }), 3000)
    .option('--interval <ms>', 'redraw interval', integerOption({ min: 1 }), 1000)
    .option(
      '--max-steps <n>',
      "end of the progress bar (default: the run's run/max_steps report, else its recipe.json budget)",
      integerOption({ min: 1 }),
    )
    .action(
      async (options: {
        run: string
        nats?: string
        runsDir: string
        once?: boolean
        wait: number
        interval: number
        maxSteps?: number
        json?: boolean
        serverTimeout: number
      }) => {
        // A run that ended: its run directory says how; there is nothing live to watch.
        const over = await findEndedRun(options.runsDir, options.run)
        if (over) {
          process.stdout.write(`${options.json ? JSON.stringify(endedRunJson(over)) : over.line}\n`)
          return
        }
        const nats = await attachRunNats('triad monitor', options.runsDir, options.run, options.nats)
        const budgetMaxSteps = await recipeMaxSteps(options.runsDir, options.run)
        let transport: NatsTransport
        try {
          transport = await connectNats({
            servers: nats.url,
            run: options.run,
            role: 'monitor',
            id: String(process.pid),
            connectTimeoutMs: 3_000,
          })
        } catch (err) {
          if (err instanceof NatsConnectError)
            throw new CliError(`${err.message}${connectHint(nats)}`, { cause: err })
          throw err
        }
        if (options.once) {
          try {
            process.stdout.write(
              await monitorOnce(transport, {
                run: options.run,
                url: nats.url,
                waitMs: options.wait,
                maxSteps: options.maxSteps,
                budgetMaxSteps,
                restarts: () => serviceRestarts(transport, options.run, 500),
                json: options.json,
              }),
            )
          } finally {
            await transport.close()
          }
          return
        }
        const state = new MetricsState()
        let onEnd: (end: { finished: boolean; step: number; time: number }) => void = () => {}
        const ended = new Promise<{ finished: boolean; step: number; time: number }>((resolve) => {
          onEnd = resolve
        })
        const sub = watchMetrics(transport, options.run, state, (line) => {
          const end = runEnd(line)
          if (end) onEnd(end)
        })
        const seen = watchRunsSeen(transport)
        const gone = serverGone(transport, options.serverTimeout)
        const started = Date.now()
        const tty = process.stdout.isTTY
        // Actor restarts come from the run's NATS services, polled in the background.
        let restarts: number | undefined
        let polling: Promise<void> | undefined
        const poll = () => {
          polling ??= serviceRestarts(transport, options.run, Math.min(500, options.interval))
            .then((r) => {
              restarts = r
            })
            .catch(() => {})
            .finally(() => {
              polling = undefined
            })
        }
        // Elsewhere than a terminal the waiting text is written only when it says something new.
        let lastWaiting = ''
        const draw = () => {
          poll()
          if (state.reports === 0) {
            const elapsedMs = Date.now() - started
            const text = waitingText({ run: options.run, nats, elapsedMs, seen: seen.runs() })
            // what is new: the hint, then each change of the runs it lists (not the seconds it counts)
            const news = elapsedMs >= NO_METRICS_HINT_MS ? `hint|${seen.runs().join(',')}` : 'waiting'
            if (tty) process.stdout.write(`\x1b[H\x1b[J${text}`)
            else if (news !== lastWaiting) process.stdout.write(`${text}\n`)
            lastWaiting = news
            return
          }
          const text = renderSnapshot(state, {
            run: options.run,
            maxSteps: options.maxSteps,
            budgetMaxSteps,
            serviceRestarts: restarts,
          })
          process.stdout.write(tty ? `\x1b[H\x1b[J${text}` : `${text}\n`)
        }
        draw()
        const timer = setInterval(draw, options.interval)
        const stopped = new Promise<'signal'>((resolve) => {
          process.once('SIGINT', () => resolve('signal'))
          process.once('SIGTERM', () => resolve('signal'))
        })
        const why = await Promise.race([stopped, ended, gone.promise])
        clearInterval(timer)
        gone.stop()
        if (why !== 'signal' && state.reports > 0) draw()
        await polling
        await seen.stop()
        await sub.stop()
        await transport.close()
        if (why === 'signal') return
        if ('goneForMs' in why)
          throw new CliError(
            `the NATS server at ${nats.url} went away (unreachable for ${formatDuration(why.goneForMs)}); has run ${options.run} ended? its run directory says how: ${join(options.runsDir, options.run)}`,
            { exitCode: MonitorExit.serverGone },
          )
        const at = `at step ${why.step} (${new Date(why.time).toISOString()})`
        if (!why.finished)
          throw new CliError(`run ${options.run} stopped before its budget ${at}: interrupted or failed`, {
            exitCode: MonitorExit.stopped,
          })
        process.stdout.write(`run ${options.run} finished ${at}\n`)
      },
    )
}
