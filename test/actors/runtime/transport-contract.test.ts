import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { z } from 'zod'
import {
  connectNats,
  InProcessTransport,
  NatsConnectError,
  type NatsServer,
  type NatsTransport,
  startNatsServer,
} from '../../../actors/index.ts'
import {
  envelope,
  freePort,
  NoRespondersError,
  RequestAbortedError,
  RequestTimeoutError,
} from '../../../actors/testing.ts'
import { type Envelope, ErrorCode, encode, MessageRegistry, RemoteError } from '../../../protocols/index.ts'
import { defineMessage } from '../../../protocols/testing.ts'

const Add = defineMessage('test.add', z.object({ a: z.number(), b: z.number() }))
const Sum = defineMessage('test.sum', z.object({ sum: z.number(), by: z.string() }))
const accepts = new MessageRegistry([Add])
const replies = new MessageRegistry([Sum])

type Testable = InProcessTransport | NatsTransport

/**
 * One contract, two transports: everything here must hold for NATS and in process alike.
 */
function contract(name: string, make: () => Promise<{ server: Testable; client: Testable }>) {
  describe(`actors/runtime/transport contract - ${name}`, () => {
    let server: Testable
    let client: Testable
    let n = 0
    const subj = () => `triad.test.contract.s${++n}`
    before(async () => {
      ;({ server, client } = await make())
    })
    after(async () => {
      await client.close()
      if (server !== client) await server.close()
    })

    const serveAdd = (subject: string, by = 'one', queue?: string) =>
      server.serve(subject, {
        accepts,
        queue,
        handler: (m: Envelope) => {
          const { a, b } = m.payload as { a: number; b: number }
          if (a < 0) throw new Error('negative input')
          return Sum.make({ sum: a + b, by })
        },
      })

    it('transport - request/reply round trip with validated reply', async () => {
      const s = subj()
      const served = await serveAdd(s)
      await server.flush()
      const reply = await client.request(s, Add.make({ a: 2, b: 3 }), { timeoutMs: 2000, replies })
      assert.deepEqual(reply.payload, { sum: 5, by: 'one' })
      assert.equal(served.stats().handled, 1)
    })

    it('transport - garbage bytes, wrong version and missing field get error replies and are counted', async () => {
      const s = subj()
      const served = await serveAdd(s)
      await server.flush()
      await assert.rejects(
        client.requestBytes(s, new Uint8Array([0x92, 0x01]), { timeoutMs: 2000 }),
        (e: unknown) => e instanceof RemoteError && e.code === ErrorCode.BadEncoding,
      )
      await assert.rejects(
        client.request(s, { v: '9.0', type: 'test.add', payload: { a: 1, b: 1 } }, { timeoutMs: 2000 }),
        (e: unknown) =>
          e instanceof RemoteError && e.code === ErrorCode.VersionMismatch && /9\.0/.test(e.message),
      )
      await assert.rejects(
        client.request(s, envelope('test.add', { a: 1 }), { timeoutMs: 2000 }),
        (e: unknown) =>
          e instanceof RemoteError && e.code === ErrorCode.InvalidMessage && /\bb\b/.test(e.message),
      )
      await assert.rejects(
        client.request(s, envelope('test.mul', { a: 1, b: 2 }), { timeoutMs: 2000 }),
        (e: unknown) =>
          e instanceof RemoteError && e.code === ErrorCode.UnknownType && /test\.add/.test(e.message),
      )
      const ok = await client.request(s, Add.make({ a: 1, b: 1 }), { timeoutMs: 2000, replies })
      assert.deepEqual(ok.payload, { sum: 2, by: 'one' })
      assert.deepEqual(served.stats(), {
        handled: 1,
        errors: 0,
        invalid: 4,
        repliesTooLarge: 0,
        repliesUnsent: 0,
      })
    })

    it('transport - a throwing handler gives handler_failed and the subject keeps serving', async () => {
      const s = subj()
      const served = await serveAdd(s)
      await server.flush()
      await assert.rejects(
        client.request(s, Add.make({ a: -1, b: 0 }), { timeoutMs: 2000 }),
        (e: unknown) =>
          e instanceof RemoteError && e.code === ErrorCode.HandlerFailed && /negative input/.test(e.message),
      )
      const ok = await client.request(s, Add.make({ a: 4, b: 4 }), { timeoutMs: 2000, replies })
      assert.equal((ok.payload as { sum: number }).sum, 8)
      assert.equal(served.stats().errors, 1)
    })

    it('transport - a queue group spreads requests over its members', async () => {
      const s = subj()
      await serveAdd(s, 'x', 'q')
      await serveAdd(s, 'y', 'q')
      await server.flush()
      const by = new Set<string>()
      for (let i = 0; i < 40; i++) {
        const r = await client.request(s, Add.make({ a: i, b: 0 }), { timeoutMs: 2000, replies })
        by.add((r.payload as { by: string }).by)
      }
      assert.deepEqual([...by].sort(), ['x', 'y'])
    })

    it('transport - nobody serving gives NoRespondersError by the deadline', async () => {
      await assert.rejects(
        client.request(subj(), Add.make({ a: 1, b: 1 }), { timeoutMs: 150 }),
        NoRespondersError,
      )
    })

    it('transport - a slow handler gives RequestTimeoutError at the deadline', async () => {
      const s = subj()
      await server.serve(s, { accepts, handler: () => new Promise<Envelope>(() => {}) })
      await server.flush()
      await assert.rejects(
        client.request(s, Add.make({ a: 1, b: 1 }), { timeoutMs: 100 }),
        (e: unknown) => e instanceof RequestTimeoutError && e.timeoutMs === 100,
      )
    })

    it('transport - aborting the signal gives up a request in flight at once with RequestAbortedError', {
      timeout: 10_000,
    }, async () => {
      const s = subj()
      let received!: () => void
      const arrived = new Promise<void>((r) => {
        received = r
      })
      await server.serve(s, {
        accepts,
        handler: () => {
          received()
          return new Promise<Envelope>(() => {})
        },
      })
      await server.flush()
      const abort = new AbortController()
      const asked = client.request(s, Add.make({ a: 1, b: 1 }), { timeoutMs: 120_000, signal: abort.signal })
      await arrived
      const reason = new Error('node stopping')
      abort.abort(reason)
      await assert.rejects(
        asked,
        (e: unknown) =>
          e instanceof RequestAbortedError &&
          e.subject === s &&
          e.cause === reason &&
          e.message === `request to ${s} was abandoned by its caller`,
      )
    })

    it('transport - an already aborted signal rejects with RequestAbortedError', async () => {
      const s = subj()
      await serveAdd(s)
      await server.flush()
      await assert.rejects(
        client.request(s, Add.make({ a: 1, b: 1 }), { timeoutMs: 1_000, signal: AbortSignal.abort() }),
        RequestAbortedError,
      )
    })

    it('transport - publish reaches wildcard subscribers and bad messages are counted', async () => {
      const got: string[] = []
      let invalid = 0
      let resolve!: () => void
      const done = new Promise<void>((r) => {
        resolve = r
      })
      const sub = server.subscribe('triad.test.pub.*', {
        accepts,
        handler: (m, subject) => {
          got.push(`${subject}:${(m.payload as { a: number }).a}`)
          if (got.length === 2) resolve()
        },
        onInvalid: () => invalid++,
      })
      await server.flush()
      client.publishBytes('triad.test.pub.x', encode({ nope: true }))
      client.publish('triad.test.pub.a', Add.make({ a: 1, b: 0 }))
      client.publish('triad.test.other', Add.make({ a: 9, b: 0 }))
      client.publish('triad.test.pub.b', Add.make({ a: 2, b: 0 }))
      await client.flush()
      await done
      assert.deepEqual(got, ['triad.test.pub.a:1', 'triad.test.pub.b:2'])
      assert.equal(invalid, 1)
      assert.equal(sub.stats().invalid, 1)
    })
  })
}

contract('in-process', async () => {
  const t = new InProcessTransport()
  return { server: t, client: t }
})

let nats: NatsServer
before(async () => {
  nats = await startNatsServer({ monitorPort: false })
})
after(() => nats.stop())

contract('nats', async () => ({
  server: await connectNats({ servers: nats.url, run: 'contract', role: 'server', id: '1' }),
  client: await connectNats({ servers: nats.url, run: 'contract', role: 'client', id: '1' }),
}))

describe('actors/runtime/nats-transport', () => {
  it('nats - a server that does not answer is a NatsConnectError naming the URL', async () => {
    const port = await freePort()
    await assert.rejects(
      connectNats({
        servers: `nats://127.0.0.1:${port}`,
        run: 'r',
        role: 'x',
        id: '1',
        connectTimeoutMs: 500,
      }),
      (e: unknown) => e instanceof NatsConnectError && e.message.includes(String(port)),
    )
  })

  it('nats - a request retrying "no responders" ends when its signal aborts, long before its deadline', {
    timeout: 10_000,
  }, async () => {
    const t = await connectNats({ servers: nats.url, run: 'r1', role: 'client', id: '2' })
    const abort = new AbortController()
    let attempts = 0
    // The retry loop asks the server again and again; the third "no responders" shows it is waiting.
    const request = t.nc.request.bind(t.nc)
    t.nc.request = ((...args: Parameters<typeof request>) => {
      if (++attempts === 3) abort.abort()
      return request(...args)
    }) as typeof request
    await assert.rejects(
      t.request('triad.r1.nobody.here', Add.make({ a: 1, b: 1 }), {
        timeoutMs: 120_000,
        signal: abort.signal,
      }),
      RequestAbortedError,
    )
    assert.equal(attempts, 3)
    await t.close()
  })

  it('nats - the connection is named triad:<run>:<role>:<id>', async () => {
    const t = await connectNats({ servers: nats.url, run: 'r1', role: 'learner', id: '0' })
    assert.equal(t.name, 'triad:r1:learner:0')
    assert.equal(t.nc.info?.server_name !== undefined, true)
    await t.close()
  })
})
