import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import { z } from 'zod'
import {
  connectNats,
  exposeActor,
  type NatsServer,
  type NatsTransport,
  remoteActor,
  startActorSystem,
  startNatsServer,
} from '../../../actors/index.ts'
import type { Behaviour } from '../../../actors/testing.ts'
import { ErrorCode, MessageRegistry, RemoteError } from '../../../protocols/index.ts'
import { defineMessage } from '../../../protocols/testing.ts'

const Work = defineMessage('test.work', z.object({ crash: z.boolean() }))
const Done = defineMessage('test.done', z.object({ served: z.number() }))

/** Counts messages since its last (re)start; crashes when asked to. */
const worker: Behaviour<{ served: number }> = {
  init: () => ({ served: 0 }),
  receive: (state, m) => {
    if ((m.payload as { crash: boolean }).crash) throw new Error('asked to crash')
    state.served++
    return Done.make({ served: state.served })
  },
}

describe('actors/runtime/bridge - an actor exposed on NATS', () => {
  let nats: NatsServer
  let a: NatsTransport
  let b: NatsTransport
  const system = startActorSystem({ name: 'bridge' })
  before(async () => {
    nats = await startNatsServer({ monitorPort: false })
    a = await connectNats({ servers: nats.url, run: 'bridge', role: 'server', id: '0' })
    b = await connectNats({ servers: nats.url, run: 'bridge', role: 'client', id: '0' })
  })
  after(async () => {
    await system.stop()
    await b.close()
    await a.close()
    await nats.stop()
  })

  it('bridge - a crash restarts the actor, the restart shows in $SRV.STATS, and it serves the next request', async () => {
    const ref = system.spawn('worker', worker, {
      supervision: {
        maxRestarts: 3,
        withinMs: 60_000,
        backoff: { initialMs: 1, maxMs: 1, factor: 1 },
        onLimit: 'stop',
      },
    })
    const exposed = await exposeActor(a, ref, {
      subject: 'triad.bridge.work.do',
      accepts: new MessageRegistry([Work]),
      service: { name: 'triad-worker', description: 'test worker' },
    })
    await a.flush()
    const remote = remoteActor(b, 'triad.bridge.work.do', { replies: new MessageRegistry([Done]) })
    assert.deepEqual((await remote.ask(Work.make({ crash: false }), 2_000)).payload, { served: 1 })
    await assert.rejects(
      remote.ask(Work.make({ crash: true }), 2_000),
      (e: unknown) =>
        e instanceof RemoteError && e.code === ErrorCode.HandlerFailed && /asked to crash/.test(e.message),
    )
    // Fresh state after the restart.
    assert.deepEqual((await remote.ask(Work.make({ crash: false }), 2_000)).payload, { served: 1 })
    // A malformed request is refused at the boundary and counted; the actor keeps serving.
    await assert.rejects(
      remote.ask({ v: '1.0', type: 'test.work', payload: { crash: 'yes' } }, 2_000),
      RemoteError,
    )
    assert.deepEqual((await remote.ask(Work.make({ crash: false }), 2_000)).payload, { served: 2 })

    const client = new Svcm(b.nc as never).client({ strategy: 'timer', maxWait: 500 })
    const all = []
    for await (const s of await client.stats('triad-worker')) all.push(s)
    assert.equal(all.length, 1)
    const data = all[0]!.endpoints![0]!.data as Record<string, number>
    assert.equal(data.restarts, 1)
    assert.equal(data.invalid, 1)
    assert.equal(data.handled, 3)
    assert.equal(data.errors, 1)
    assert.deepEqual(exposed.stats(), {
      handled: 3,
      errors: 1,
      invalid: 1,
      repliesTooLarge: 0,
      repliesUnsent: 0,
      restarts: 1,
      actorErrors: 1,
    })
  })
})
