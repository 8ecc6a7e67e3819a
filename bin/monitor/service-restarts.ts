import { Svcm } from '@nats-io/services'
import type { NatsTransport } from '../../actors/index.ts'

/**
 * Sums the actor restarts of one run's services: every NATS service (`$SRV.STATS`) whose name
 * starts with `triad-` and whose metadata `run` is `run`, adding the `restarts` of each endpoint's
 * stats data. Returns `undefined` when no service of the run answered within `waitMs` (or no
 * service at all is on the server).
 */
export async function serviceRestarts(
  transport: NatsTransport,
  run: string,
  waitMs: number,
): Promise<number | undefined> {
  const client = new Svcm(transport.nc as never).client({ strategy: 'timer', maxWait: waitMs })
  let found = false
  let restarts = 0
  // With no service on the server at all the request has no responders: none of the run either.
  try {
    for await (const s of await client.stats()) {
      if (!s.name.startsWith('triad-') || s.metadata?.run !== run) continue
      found = true
      for (const e of s.endpoints ?? []) {
        const r = (e.data as Record<string, unknown> | undefined)?.restarts
        if (typeof r === 'number') restarts += r
      }
    }
  } catch (err) {
    if (!/no responders/i.test(`${(err as Error)?.message} ${String((err as Error)?.cause ?? '')}`)) throw err
  }
  return found ? restarts : undefined
}
