/**
 * `triad bench messaging`: the actor path (validated envelopes, actor mailbox, NATS service
 * endpoint) against raw nats.js with the same msgpack payload, in the same run, on the same server.
 */
import { connect } from '@nats-io/transport-node'
import {
  connectNats,
  echoAccepts,
  echoReplies,
  type NatsTransport,
  remoteActor,
  startActorSystem,
  startEcho,
  startNatsServer,
} from '../../actors/index.ts'
import { EchoPing, encodeEnvelope, Subjects } from '../../protocols/index.ts'

type Rates = { perSecond: number; count: number; seconds: number }

async function timed(count: number, body: () => Promise<void>): Promise<Rates> {
  const t0 = performance.now()
  await body()
  const seconds = (performance.now() - t0) / 1000
  return { perSecond: Math.round(count / seconds), count, seconds: Number(seconds.toFixed(3)) }
}

/** Runs `total` calls of `call` with at most `inFlight` outstanding. */
async function pipelined(
  total: number,
  inFlight: number,
  call: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < total) await call(next++)
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
}

/** Waits until `counter()` reaches `target`, polling the event loop (no sleeps). */
function until(counter: () => number, target: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (counter() >= target ? resolve() : setImmediate(check))
    check()
  })
}

export async function run(options: { nats?: string; quick?: boolean }) {
  const n = options.quick
    ? { seq: 500, par: 3_000, oneWay: 20_000 }
    : { seq: 4_000, par: 30_000, oneWay: 200_000 }
  const server = options.nats ? undefined : await startNatsServer({ monitorPort: false })
  const url = options.nats ?? server!.url
  const run = 'bench'
  const payload = EchoPing.make({ seq: 1, sentAt: 0, data: 'x'.repeat(64) })
  const bytes = encodeEnvelope(payload)

  // Raw nats.js: a responder that echoes the bytes.
  const rawServer = await connect({ servers: url })
  const rawClient = await connect({ servers: url })
  rawServer.subscribe('bench.raw.echo', {
    callback: (_e, m) => {
      m.respond(m.data)
    },
  })
  let rawReceived = 0
  rawServer.subscribe('bench.raw.oneway', {
    callback: () => {
      rawReceived++
    },
  })
  await rawServer.flush()

  // Actor path: an echo actor exposed as a NATS service; a remote reference asks it.
  const system = startActorSystem({ name: 'bench' })
  const actorServer: NatsTransport = await connectNats({ servers: url, run, role: 'bench-server', id: '0' })
  const actorClient: NatsTransport = await connectNats({ servers: url, run, role: 'bench-client', id: '0' })
  await startEcho(system, actorServer, run, 'bench')
  let actorReceived = 0
  actorServer.subscribe(`triad.${run}.bench.oneway`, { accepts: echoAccepts, handler: () => actorReceived++ })
  await actorServer.flush()
  const echo = remoteActor(actorClient, Subjects.echo(run), { replies: echoReplies })

  const raw = {
    sequential: () =>
      timed(n.seq, () =>
        pipelined(n.seq, 1, () => rawClient.request('bench.raw.echo', bytes, { timeout: 5000 })),
      ),
    inFlight64: () =>
      timed(n.par, () =>
        pipelined(n.par, 64, () => rawClient.request('bench.raw.echo', bytes, { timeout: 5000 })),
      ),
    oneWay: () => {
      const start = rawReceived
      return timed(n.oneWay, async () => {
        for (let i = 0; i < n.oneWay; i++) rawClient.publish('bench.raw.oneway', bytes)
        await rawClient.flush()
        await until(() => rawReceived - start, n.oneWay)
      })
    },
  }
  const actor = {
    sequential: () => timed(n.seq, () => pipelined(n.seq, 1, () => echo.ask(payload, 5000))),
    inFlight64: () => timed(n.par, () => pipelined(n.par, 64, () => echo.ask(payload, 5000))),
    oneWay: () => {
      const start = actorReceived
      return timed(n.oneWay, async () => {
        for (let i = 0; i < n.oneWay; i++) actorClient.publish(`triad.${run}.bench.oneway`, payload)
        await actorClient.flush()
        await until(() => actorReceived - start, n.oneWay)
      })
    },
  }

  // Warm up both paths, then alternate raw and actor twice and keep the best of each.
  await pipelined(300, 8, () => echo.ask(payload, 5000))
  await pipelined(300, 8, () => rawClient.request('bench.raw.echo', bytes, { timeout: 5000 }))
  const result: Record<string, unknown> = {}
  for (const key of ['sequential', 'inFlight64', 'oneWay'] as const) {
    let bestRaw: Rates | undefined
    let bestActor: Rates | undefined
    for (let round = 0; round < 2; round++) {
      const r = await raw[key]()
      const a = await actor[key]()
      if (!bestRaw || r.perSecond > bestRaw.perSecond) bestRaw = r
      if (!bestActor || a.perSecond > bestActor.perSecond) bestActor = a
    }
    result[key] = {
      raw: bestRaw,
      actor: bestActor,
      ratio: Number((bestActor!.perSecond / bestRaw!.perSecond).toFixed(3)),
    }
  }

  await system.stop()
  await actorClient.close()
  await actorServer.close()
  await rawClient.drain()
  await rawServer.drain()
  await server?.stop()
  return {
    bench: 'messaging',
    config: {
      payloadBytes: bytes.byteLength,
      ...n,
      server: options.nats ? 'external' : 'private nats-server',
    },
    requestReplySequential: result.sequential,
    requestReply64InFlight: result.inFlight64,
    oneWay: result.oneWay,
    target: { requestReply64InFlightRatio: 0.7 },
  }
}
