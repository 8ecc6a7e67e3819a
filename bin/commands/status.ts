import { Svcm } from '@nats-io/services'
import type { Command } from 'commander'
import { connectNats } from '../../actors/index.ts'
import { CliError } from '../errors.ts'
import { endedRunJson, findEndedRun } from '../monitor/ended-run.ts'
import { attachRunNats, connectHint } from '../monitor/run-nats.ts'
import { integerOption } from '../numeric-option.ts'

/** One live triad service instance as `$SRV.STATS` reports it. */
export interface ServiceRow {
  name: string
  id: string
  version: string
  /** Subjects of its endpoints. */
  subjects: string[]
  queue?: string
  /** Requests counted by the NATS service library. */
  requests: number
  /** triad's own counters: handled, errors, invalid, restarts, actorErrors. */
  data: Record<string, number>
  metadata: Record<string, string>
  started: string
}

/** What `triad status --json` prints. */
export interface StatusReport {
  nats: string
  /** Where the URL came from: `--nats`, `recorded by triad run in ...`, or `the default`. */
  source?: string
  /** With `--run`: the run everything below is limited to. */
  run?: string
  services: ServiceRow[]
  server?: {
    healthy: boolean
    version: string
    uptime: string
    connections: number
    /**
     * Connections per triad role (from names `triad:<run>:<role>:<id>`); others under `other`.
     * With `run`: only that run's connections.
     */
    connectionsByRole: Record<string, number>
    /** Subscriptions per subject, for subjects under `triad.` (with `run`: under `triad.<run>.`). */
    subscriptionsBySubject: Record<string, number>
    jetstream?: {
      streams: number
      consumers: number
      messages: number
      bytes: number
      memory: number
      storage: number
    }
  }
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch((err: Error) => {
    throw new CliError(`cannot reach the NATS monitoring endpoint ${url}: ${err.message}`, { cause: err })
  })
  if (!res.ok && res.status !== 503) throw new CliError(`${url} answered HTTP ${res.status}`)
  return (await res.json()) as T
}

/**
 * Collects the live triad services (NATS Services API, names starting `triad-`; with `run`, only
 * those whose metadata `run` is that run) and, with a monitoring URL, the server's health,
 * connections per role, subscriptions per subject (with `run`: that run's) and JetStream usage.
 * @throws CliError when NATS or the monitoring endpoint cannot be reached; the message says where
 *   the URL came from (`source`) when it was not `--nats`.
 */
export async function collectStatus(options: {
  nats: string
  /** Where `nats` came from, for messages (`recorded by triad run in ...`). */
  source?: string
  monitor?: string
  waitMs?: number
  run?: string
}): Promise<StatusReport> {
  const run = options.run
  const transport = await connectNats({
    servers: options.nats,
    run: 'status',
    role: 'status',
    id: String(process.pid),
  }).catch((err: Error) => {
    const hint = options.source ? connectHint({ url: options.nats, source: options.source }) : ''
    throw new CliError(`${err.message}${hint}`, { cause: err })
  })
  const services: ServiceRow[] = []
  try {
    const client = new Svcm(transport.nc as never).client({
      strategy: 'timer',
      maxWait: options.waitMs ?? 1_000,
    })
    // With no service on the server the request has no responders: that is an empty list.
    try {
      for await (const s of await client.stats()) {
        if (!s.name.startsWith('triad-') || (run !== undefined && s.metadata?.run !== run)) continue
        const endpoints = s.endpoints ?? []
        services.push({
          name: s.name,
          id: s.id,
          version: s.version,
          subjects: endpoints.map((e) => e.subject),
          queue: endpoints[0]?.queue_group,
          requests: endpoints.reduce((a, e) => a + e.num_requests, 0),
          data: Object.assign({}, ...endpoints.map((e) => (e.data ?? {}) as Record<string, number>)),
          metadata: s.metadata ?? {},
          started: s.started,
        })
      }
    } catch (err) {
      if (!/no responders/i.test(`${(err as Error)?.message} ${String((err as Error)?.cause ?? '')}`))
        throw err
    }
  } finally {
    await transport.close()
  }
  services.sort(
    (a, b) =>
      a.name.localeCompare(b.name) ||
      (a.metadata.run ?? '').localeCompare(b.metadata.run ?? '') ||
      a.id.localeCompare(b.id),
  )
  const report: StatusReport = {
    nats: options.nats,
    ...(options.source ? { source: options.source } : {}),
    ...(run !== undefined ? { run } : {}),
    services,
  }
  if (!options.monitor) return report

  const base = options.monitor.replace(/\/$/, '')
  const [health, varz, connz, subsz, jsz] = await Promise.all([
    getJson<{ status: string }>(`${base}/healthz`),
    getJson<{ version: string; uptime: string; connections: number }>(`${base}/varz`),
    getJson<{ connections?: { name?: string; subscriptions_list?: string[] }[] }>(
      `${base}/connz?subs=1&limit=1024`,
    ),
    getJson<{ subscriptions_list?: { subject: string }[] }>(`${base}/subsz?subs=1&limit=4096`),
    getJson<{
      streams?: number
      consumers?: number
      messages?: number
      bytes?: number
      memory?: number
      storage?: number
      disabled?: boolean
    }>(`${base}/jsz`).catch(() => undefined),
  ])
  const connectionsByRole: Record<string, number> = {}
  const subscriptionsBySubject: Record<string, number> = {}
  const prefix = run === undefined ? 'triad.' : `triad.${run}.`
  for (const c of connz.connections ?? []) {
    const m = /^triad:([^:]+):([^:]+):/.exec(c.name ?? '')
    if (run !== undefined && m?.[1] !== run) continue
    const role = m ? m[2]! : 'other'
    connectionsByRole[role] = (connectionsByRole[role] ?? 0) + 1
    if (!subsz.subscriptions_list)
      for (const s of c.subscriptions_list ?? [])
        if (s.startsWith(prefix)) subscriptionsBySubject[s] = (subscriptionsBySubject[s] ?? 0) + 1
  }
  for (const s of subsz.subscriptions_list ?? [])
    if (s.subject.startsWith(prefix))
      subscriptionsBySubject[s.subject] = (subscriptionsBySubject[s.subject] ?? 0) + 1
  report.server = {
    healthy: health.status === 'ok',
    version: varz.version,
    uptime: varz.uptime,
    connections: varz.connections,
    connectionsByRole,
    subscriptionsBySubject,
    jetstream:
      jsz && !jsz.disabled
        ? {
            streams: jsz.streams ?? 0,
            consumers: jsz.consumers ?? 0,
            messages: jsz.messages ?? 0,
            bytes: jsz.bytes ?? 0,
            memory: jsz.memory ?? 0,
            storage: jsz.storage ?? 0,
          }
        : undefined,
  }
  return report
}

/**
 * Renders a status report as aligned text for a terminal: the server (and the run), then one row
 * per service. With no service it says where it asked and, without a run, how to find one: a
 * `triad run` without `--nats` serves its run on its own nats-server, on a free port.
 */
export function formatStatus(r: StatusReport): string {
  const from = r.source && r.source !== '--nats' ? ` (${r.source})` : ''
  const lines: string[] = [`NATS ${r.nats}${from}${r.run === undefined ? '' : `, run ${r.run}`}`, '']
  if (r.services.length === 0 && r.run !== undefined)
    lines.push(`no service of run ${r.run} answers at ${r.nats}: has the run ended?`)
  else if (r.services.length === 0)
    lines.push(
      `no triad services answer at ${r.nats}`,
      'triad run without --nats serves a run on its own nats-server on a free port: pass --run RUN to ask the server',
      'recorded in runs/RUN/logs/run.jsonl (with --runs-dir for another runs folder), or --nats with the URL triad run printed',
    )
  else {
    const rows = r.services.map((s) => [
      s.name,
      s.metadata.run ?? '',
      s.id.slice(0, 10),
      s.subjects.join(','),
      s.queue ?? '',
      String(s.data.handled ?? s.requests),
      String(s.data.errors ?? 0),
      String(s.data.invalid ?? 0),
      String(s.data.restarts ?? 0),
    ])
    lines.push(
      ...table(
        ['service', 'run', 'id', 'subject', 'queue', 'handled', 'errors', 'invalid', 'restarts'],
        rows,
      ),
    )
  }
  if (r.server) {
    const s = r.server
    lines.push(
      '',
      `server ${s.version}, ${s.healthy ? 'healthy' : 'UNHEALTHY'}, up ${s.uptime}, ${s.connections} connections`,
    )
    lines.push(
      ...table(
        ['role', 'connections'],
        Object.entries(s.connectionsByRole).map(([k, v]) => [k, String(v)]),
      ),
    )
    const subs = Object.entries(s.subscriptionsBySubject)
    if (subs.length)
      lines.push(
        '',
        ...table(
          ['subject', 'subscriptions'],
          subs.map(([k, v]) => [k, String(v)]),
        ),
      )
    if (s.jetstream) {
      const j = s.jetstream
      lines.push(
        '',
        `JetStream: ${j.streams} streams, ${j.consumers} consumers, ${j.messages} messages, ${j.bytes} bytes`,
      )
    }
  }
  return lines.join('\n')
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const fmt = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [fmt(head), ...rows.map(fmt)]
}

/**
 * `triad status [--run RUN] [--nats URL] [--monitor URL]`. With `--run` and without `--nats`, the
 * server (and its monitoring URL) is the one `triad run` recorded in `<runs-dir>/<run>/logs/run.jsonl`.
 * A run that ended (that file holds its `stop`) is not asked on NATS: one line says how it ended
 * (`findEndedRun`), exit status 0.
 */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('list the live triad services and, with a monitoring URL, the NATS server state')
    .option(
      '--nats <url>',
      'NATS server URL (default: with --run, the URL triad run recorded for it, else nats://127.0.0.1:4222)',
    )
    .option(
      '--monitor <url>',
      "the server's monitoring URL, http://127.0.0.1:8222 (default: with --run, the one triad run recorded)",
    )
    .option('--run <run>', "only this run's services, connections and subjects (the run directory name)")
    .option('--runs-dir <dir>', 'where triad run made the run directory of --run', 'runs')
    .option('--json', 'print JSON instead of a table')
    .option('--wait <ms>', 'how long to collect service answers, ms', integerOption({ min: 1 }), 1000)
    .action(
      async (o: {
        nats?: string
        monitor?: string
        run?: string
        runsDir: string
        json?: boolean
        wait: number
      }) => {
        // A run that ended: its run directory says how, and nothing of it answers on NATS.
        const ended = o.run === undefined ? undefined : await findEndedRun(o.runsDir, o.run)
        if (ended) {
          process.stdout.write(`${o.json ? JSON.stringify(endedRunJson(ended), null, 2) : ended.line}\n`)
          return
        }
        const nats = await attachRunNats('triad status', o.runsDir, o.run, o.nats)
        const report = await collectStatus({
          nats: nats.url,
          source: nats.source,
          monitor: o.monitor ?? nats.monitor,
          waitMs: o.wait,
          run: o.run,
        })
        process.stdout.write(`${o.json ? JSON.stringify(report, null, 2) : formatStatus(report)}\n`)
      },
    )
}
