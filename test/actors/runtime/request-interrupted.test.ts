import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { z } from 'zod'
import {
  connectNats,
  type NatsServer,
  type NatsTransport,
  RequestInterruptedError,
  RequestTimeoutError,
  startNatsServer,
} from '../../../actors/index.ts'
import { defineMessage, type Envelope, MessageRegistry } from '../../../protocols/index.ts'
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
