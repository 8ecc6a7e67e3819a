import { Svcm } from '@nats-io/services'
import type { Command } from 'commander'
import { connectNats } from '../../actors/index.ts'
import { CliError } from '../errors.ts'

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
  services: ServiceRow[]
  server?: {
    healthy: boolean
    version: string
    uptime: string
    connections: number
    /** Connections per triad role (from names `triad:<run>:<role>:<id>`); others under `other`. */
    connectionsByRole: Record<string, number>
    /** Subscriptions per subject, for subjects under `triad.`. */
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
 * Collects the live triad services (NATS Services API, names starting `triad-`) and, with a
 * monitoring URL, the server's health, connections per role, subscriptions per subject and
 * JetStream usage.
 * @throws CliError when NATS or the monitoring endpoint cannot be reached.
 */
export async function collectStatus(options: {
  nats: string
  monitor?: string
  waitMs?: number
}): Promise<StatusReport> {
  const transport = await connectNats({
    servers: options.nats,
    run: 'status',
    role: 'status',
    id: String(process.pid),
  }).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
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
        if (!s.name.startsWith('triad-')) continue
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
  services.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))
  const report: StatusReport = { nats: options.nats, services }
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
  for (const c of connz.connections ?? []) {
    const m = /^triad:[^:]+:([^:]+):/.exec(c.name ?? '')
    const role = m ? m[1]! : 'other'
    connectionsByRole[role] = (connectionsByRole[role] ?? 0) + 1
    if (!subsz.subscriptions_list)
      for (const s of c.subscriptions_list ?? [])
        if (s.startsWith('triad.')) subscriptionsBySubject[s] = (subscriptionsBySubject[s] ?? 0) + 1
  }
  for (const s of subsz.subscriptions_list ?? [])
    if (s.subject.startsWith('triad.'))
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

/** Renders a status report as aligned text for a terminal. */
export function formatStatus(r: StatusReport): string {
  const lines: string[] = [`NATS ${r.nats}`, '']
  if (r.services.length === 0) lines.push('no triad services answer')
  else {
    const rows = r.services.map((s) => [
      s.name,
      s.id.slice(0, 10),
      s.subjects.join(','),
      s.queue ?? '',
      String(s.data.handled ?? s.requests),
      String(s.data.errors ?? 0),
      String(s.data.invalid ?? 0),
      String(s.data.restarts ?? 0),
    ])
    lines.push(
      ...table(['service', 'id', 'subject', 'queue', 'handled', 'errors', 'invalid', 'restarts'], rows),
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

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('list the live triad services and, with --monitor, the NATS server state')
    .option('--nats <url>', 'NATS server URL', 'nats://127.0.0.1:4222')
    .option('--monitor <url>', "the server's monitoring URL (http://127.0.0.1:8222)")
    .option('--json', 'print JSON instead of a table')
    .option('--wait <ms>', 'how long to collect service answers, ms', '1000')
    .action(async (o: { nats: string; monitor?: string; json?: boolean; wait: string }) => {
      const report = await collectStatus({ nats: o.nats, monitor: o.monitor, waitMs: Number(o.wait) })
      process.stdout.write(`${o.json ? JSON.stringify(report, null, 2) : formatStatus(report)}\n`)
    })
}
