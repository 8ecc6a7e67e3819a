import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { z } from 'zod'
import { connectNats, type NatsServer, type NatsTransport, startNatsServer } from '../../../actors/index.ts'
import { NoRespondersError, RequestInterruptedError, RequestTimeoutError } from '../../../actors/testing.ts'
import { type Envelope, MessageRegistry } from '../../../protocols/index.ts'
import { defineMessage } from '../../../protocols/testing.ts'
import { within } from '../../support/within.ts'

const Ask = defineMessage('test.ask', z.object({ n: z.number() }))
const Answer = defineMessage('test.answer', z.object({ n: z.number() }))

/**
 * A request in flight when its NATS server dies (SIGKILL) is lost with the server's buffers; the
 * transport gives it up at the disconnect instead of at its deadline, and requests after the
 * restart (same port and store) are answered.
 */
describe('actors/runtime/nats-transport - a request in flight when the server dies', () => {
  let nats: NatsServer
  let server: NatsTransport
  let client: NatsTransport
  const store = mkdtempSync(join(tmpdir(), 'triad-interrupted-'))
  before(async () => {
    nats = await startNatsServer({ monitorPort: false, storeDir: store })
    server = await connectNats({ servers: nats.url, run: 'interrupted', role: 'server', id: '0' })
    client = await connectNats({ servers: nats.url, run: 'interrupted', role: 'client', id: '0' })
  })
  after(async () => {
    await client?.close()
    await server?.close()
    await nats?.stop()
    rmSync(store, { recursive: true, force: true })
  })

  it('nats-transport - fails with RequestInterruptedError (a RequestTimeoutError) at the disconnect, long before its 60 s deadline; after the restart a request is answered', async () => {
    const subject = 'triad.test.interrupted.ask'
    // `subject` answers at once; `silent` never answers (the request the server dies under).
    const silent = 'triad.test.interrupted.silent'
    await server.serve(subject, {
      accepts: new MessageRegistry([Ask]),
      handler: (m: Envelope) => Answer.make({ n: (m.payload as { n: number }).n + 1 }),
    })
    await server.serve(silent, {
      accepts: new MessageRegistry([Ask]),
      handler: () => new Promise<Envelope>(() => {}),
    })
    await server.flush()
    const replies = new MessageRegistry([Answer])
    assert.deepEqual(
      (await client.request(subject, Ask.make({ n: 1 }), { timeoutMs: 5_000, replies })).payload,
      {
        n: 2,
      },
    )
    const pending = client.request(silent, Ask.make({ n: -1 }), { timeoutMs: 60_000, replies })
    const outcome = pending.then(
      () => 'answered',
      (err: unknown) => err,
    )
    await client.flush()
    await nats.kill()
    const err = await within(outcome, 10_000, 'the request in flight to fail after the server died')
    assert.ok(err instanceof RequestInterruptedError, String(err))
    assert.ok(err instanceof RequestTimeoutError)
    assert.equal(
      (err as Error).message,
      `request to ${silent} interrupted: the connection to NATS dropped before its reply`,
    )
    await nats.restart()
    const after = await within(
      client.request(subject, Ask.make({ n: 5 }), { timeoutMs: 20_000, replies }),
      25_000,
      'a request after the restart to be answered',
    )
    assert.deepEqual(after.payload, { n: 6 })
  })
})

/** Resolves at the connection's next status event of `type` ('disconnect', 'reconnect'). */
async function nextStatus(transport: NatsTransport, type: string): Promise<void> {
  for await (const s of transport.nc.status()) if (s.type === type) return
}

/**
 * A subject served while the connection is down: the flush that confirms the subscription rejects,
 * and nothing is left serving the subject after the reconnect (before, the subscription stayed
 * with no one to stop it: the env controller's tombstone for a lost worker kept answering
 * "worker lost" in place of the worker after the controller restarted).
 */
describe('actors/runtime/nats-transport - serving while the connection is down', () => {
  let nats: NatsServer
  let server: NatsTransport
  let client: NatsTransport
  const store = mkdtempSync(join(tmpdir(), 'triad-serve-down-'))
  before(async () => {
    nats = await startNatsServer({ monitorPort: false, storeDir: store })
    server = await connectNats({ servers: nats.url, run: 'serve-down', role: 'server', id: '0' })
    client = await connectNats({ servers: nats.url, run: 'serve-down', role: 'client', id: '0' })
  })
  after(async () => {
    await client?.close()
    await server?.close()
    await nats?.stop()
    rmSync(store, { recursive: true, force: true })
  })

  for (const service of [false, true])
    it(`nats-transport - serve${service ? ' as a NATS service' : ''} rejects with "connection disconnected", and after the reconnect the subject has no responder`, async () => {
      const subject = `triad.test.serve-down.${service ? 'service' : 'plain'}`
      const down = nextStatus(server, 'disconnect')
      await nats.kill()
      await within(down, 10_000, 'the disconnect')
      const served = server.serve(subject, {
        accepts: new MessageRegistry([Ask]),
        handler: () => Answer.make({ n: 1 }),
        ...(service
          ? { service: { name: 'serve-down', description: 'a service made while the connection is down' } }
          : {}),
      })
      await assert.rejects(within(served, 10_000, 'serve to settle'), /connection disconnected/)
      const up = Promise.all([nextStatus(server, 'reconnect'), nextStatus(client, 'reconnect')])
      await nats.restart()
      await within(up, 20_000, 'both connections back')
      await server.flush()
      await assert.rejects(
        client.request(subject, Ask.make({ n: 1 }), {
          timeoutMs: 1_000,
          replies: new MessageRegistry([Answer]),
          retryNoResponders: false,
        }),
        NoRespondersError,
      )
    })
})
