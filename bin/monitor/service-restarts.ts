import { Svcm } from '@nats-io/services'
import type { NatsTransport } from '../../actors/index.ts'

/**
 * Sums the actor restarts of one run's services: every NATS service (`$SRV.STATS`) whose name
 * starts with `triad-` and whose metadata `run` is `run`, adding the `restarts` of each endpoint's
 * stats data. Returns `undefined` when no service of the run answered within `waitMs`.
 */
export async function serviceRestarts(
  transport: NatsTransport,
  run: string,
  waitMs: number,
): Promise<number | undefined> {
  const client = new Svcm(transport.nc as never).client({ strategy: 'timer', maxWait: waitMs })
  let found = false
  let restarts = 0
  for await (const s of await client.stats()) {
    if (!s.name.startsWith('triad-') || s.metadata?.run !== run) continue
    found = true
    for (const e of s.endpoints ?? []) {
      const r = (e.data as Record<string, unknown> | undefined)?.restarts
      if (typeof r === 'number') restarts += r
    }
  }
  return found ? restarts : undefined
}
