import { join } from 'node:path'
import type { Command } from 'commander'
import {
  type Clock,
  connectNats,
  type MetricsLine,
  metricsWildcard,
  NatsConnectError,
  type NatsTransport,
  readRunTransport,
  type Served,
  systemClock,
  type Transport,
} from '../../actors/index.ts'
import { checkToken, MessageRegistry, MetricsReport } from '../../protocols/index.ts'
import { CliError } from '../errors.ts'
import { MetricsState, renderSnapshot } from '../monitor/metrics-state.ts'
import { serviceRestarts } from '../monitor/service-restarts.ts'

const accepts = new MessageRegistry([MetricsReport])

/** Feeds every `metrics.report` of a run (`triad.<run>.metrics.>`) into `state`. */
export function watchMetrics(transport: Transport, run: string, state: MetricsState): Served {
  return transport.subscribe(metricsWildcard(run), {
    accepts,
    handler: (message) => state.add(message.payload as MetricsLine),
  })
}

/** Options of `monitorOnce`. */
export interface MonitorOnceOptions {
  run: string
  /** How long to collect reports before rendering, ms. */
  waitMs: number
  maxSteps?: number
  clock?: Clock
  /** Reads the run's actor restarts (from the NATS services); called once after the window. */
  restarts?: () => Promise<number | undefined>
}

/**
 * Collects a run's metrics for `waitMs` and renders one snapshot.
 * @throws CliError when no report arrived in that time.
 */
export async function monitorOnce(transport: Transport, options: MonitorOnceOptions): Promise<string> {
  const clock = options.clock ?? systemClock
  const state = new MetricsState()
  const sub = watchMetrics(transport, options.run, state)
  await new Promise<void>((resolve) => clock.setTimeout(resolve, options.waitMs))
  await sub.stop()
  if (state.reports === 0)
    throw new CliError(
      `no metrics on ${metricsWildcard(options.run)} within ${options.waitMs} ms; is run '${options.run}' running? (a run in one process on the in-process transport cannot be watched from outside it)`,
    )
  const restarts = await options.restarts?.()
  return renderSnapshot(state, { run: options.run, maxSteps: options.maxSteps, serviceRestarts: restarts })
}

/**
 * The error for a run that `triad monitor` cannot attach to: one that `triad run` started in one
 * process on the in-process transport (its `logs/run.jsonl` says so), whose metrics never leave
 * that process. Undefined for any other run, or when `<runsDir>/<run>` is not here.
 */
export async function unmonitorableRun(runsDir: string, run: string): Promise<CliError | undefined> {
  const dir = join(runsDir, run)
  const transport = await readRunTransport(dir)
  if (transport?.transport !== 'in-process') return undefined
  return new CliError(
    `run ${run} runs in one process on the in-process transport, so triad monitor cannot attach to it: ` +
      `its live view is in the terminal of triad run, its metrics in ${join(dir, 'metrics.jsonl')} ` +
      `(triad report ${dir} charts them). Start a run with nats-server on PATH, or with --nats URL, to ` +
      'watch it from another process or machine.',
  )
}

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v)
  if (!Number.isInteger(n) || n <= 0) throw new CliError(`${name} must be a positive integer, got '${v}'`)
  return n
}

/** `triad monitor --nats URL --run RUN [--once]`: a live terminal view of a run's metrics. */
export function registerMonitor(program: Command): void {
  program
    .command('monitor')
    .description(
      "live view of a run's metrics: progress, success and reward per task, tokens/s, staleness, restarts",
    )
    .requiredOption('--run <run>', 'run id (the run directory name, e.g. quickstart-20261129-182157)')
    .option('--nats <url>', 'NATS server URL(s)', 'nats://127.0.0.1:4222')
    .option('--runs-dir <dir>', 'where triad run made the run directory (to tell a one-process run)', 'runs')
    .option('--once', 'print one snapshot after --wait ms and exit')
    .option('--wait <ms>', 'with --once: how long to collect metrics', positiveInt('--wait'), 3000)
    .option('--interval <ms>', 'redraw interval', positiveInt('--interval'), 1000)
    .option(
      '--max-steps <n>',
      'end of the progress bar (default: the run/max_steps metric)',
      positiveInt('--max-steps'),
    )
    .action(
      async (options: {
        run: string
        nats: string
        runsDir: string
        once?: boolean
        wait: number
        interval: number
        maxSteps?: number
      }) => {
        try {
          checkToken(options.run, 'run id')
        } catch (err) {
          throw new CliError((err as Error).message, { cause: err })
        }
        const refused = await unmonitorableRun(options.runsDir, options.run)
        if (refused) throw refused
        let transport: NatsTransport
        try {
          transport = await connectNats({
            servers: options.nats,
            run: options.run,
            role: 'monitor',
            id: String(process.pid),
            connectTimeoutMs: 3_000,
          })
        } catch (err) {
          if (err instanceof NatsConnectError) throw new CliError(err.message, { cause: err })
          throw err
        }
        if (options.once) {
          try {
            process.stdout.write(
              await monitorOnce(transport, {
                run: options.run,
                waitMs: options.wait,
                maxSteps: options.maxSteps,
                restarts: () => serviceRestarts(transport, options.run, 500),
              }),
            )
          } finally {
            await transport.close()
          }
          return
        }
        const state = new MetricsState()
        const sub = watchMetrics(transport, options.run, state)
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
        const draw = () => {
          poll()
          const text = state.reports
            ? renderSnapshot(state, {
                run: options.run,
                maxSteps: options.maxSteps,
                serviceRestarts: restarts,
              })
            : `run ${options.run}: waiting for metrics on ${metricsWildcard(options.run)}\n`
          process.stdout.write(tty ? `\x1b[H\x1b[J${text}` : `${text}\n`)
        }
        draw()
        const timer = setInterval(draw, options.interval)
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve)
          process.once('SIGTERM', resolve)
        })
        clearInterval(timer)
        await polling
        await sub.stop()
        await transport.close()
      },
    )
}
