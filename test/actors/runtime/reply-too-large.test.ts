import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import { z } from 'zod'
import { connectNats, type NatsTransport } from '../../../actors/index.ts'
import { NoRespondersError, PayloadTooLargeError, RequestTimeoutError } from '../../../actors/testing.ts'
import {
  EchoPing,
  type Envelope,
  EnvStart,
  ErrorCode,
  encodeEnvelope,
  MessageRegistry,
  RemoteError,
  Subjects,
} from '../../../protocols/index.ts'
import { defineMessage } from '../../../protocols/testing.ts'
import { suiteNatsServer } from '../../support/suite-nats-server.ts'
import { startTriad, type TriadProcess } from '../../support/triad-process.ts'

/** The service stats `data` of the run's service `name` (summed over its endpoints). */
async function serviceData(
  client: NatsTransport,
  name: string,
  run: string,
): Promise<Record<string, number>> {
  const svc = new Svcm(client.nc as never).client({ strategy: 'timer', maxWait: 1_000 })
  const data: Record<string, number> = {}
  for await (const s of await svc.stats(name))
    if (s.metadata?.run === run)
      for (const e of s.endpoints ?? [])
        for (const [k, v] of Object.entries((e.data ?? {}) as Record<string, number>))
          data[k] = (data[k] ?? 0) + v
  return data
}

/** A string that makes the encoded message `make(string)` exactly `bytes` long. */
function grown(make: (s: string) => Envelope, bytes: number): string {
  let s = 'x'.repeat(bytes - 200)
  s += 'x'.repeat(bytes - encodeEnvelope(make(s)).byteLength)
  assert.equal(encodeEnvelope(make(s)).byteLength, bytes)
  return s
}

/** Asserts that `p` rejects with a `reply_too_large` error reply naming a size over `limit`. */
async function rejectsTooLarge(p: Promise<unknown>, limit: number): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof RemoteError, String(err))
    assert.equal(err.code, ErrorCode.ReplyTooLarge)
    const d = err.details as { bytes: number; limit: number; type: string }
    assert.equal(d.limit, limit)
    assert.ok(d.bytes > limit, `${d.bytes} > ${limit}`)
    assert.match(
      err.message,
      new RegExp(`of ${d.bytes} bytes is over the server's max_payload of ${limit} bytes`),
    )
    return true
  })
}

describe('actors/runtime/nats-transport - replies over max_payload, in serving processes on real NATS', () => {
  const nats = suiteNatsServer('triad-rtl-')
  const run = 'rtl'
  let client: NatsTransport
  let limit: number
  const procs: TriadProcess[] = []

  before(async () => {
    client = await connectNats({ servers: nats.url, run, role: 'tester', id: '0' })
    limit = client.maxPayload()!
    for (const role of ['echo', 'env-controller']) {
      const p = startTriad(['worker', '--role', role, '--nats', nats.url, '--run', run])
      procs.push(p)
      await p.waitForLine((j) => j.event === 'ready', 60_000)
    }
  })
  after(async () => {
    for (const p of procs) await p.kill()
    await client.close()
  })

  it('the connection reports the server max_payload (1 MiB by default)', () => {
    assert.equal(limit, 1_048_576)
  })

  it('an echo.ping just under the limit gets reply_too_large (the pong is over it); the echo process stays up and counts it', async () => {
    // The pong repeats the ping's fields and adds `by` (at least 5 bytes): a ping 4 bytes under
    // the limit gives a pong over it.
    const ping = (data: string) => EchoPing.make({ seq: 1, sentAt: 0, data })
    const data = grown((d) => ping(d), limit - 4)
    for (let i = 0; i < 3; i++)
      await rejectsTooLarge(client.request(Subjects.echo(run), ping(data), { timeoutMs: 10_000 }), limit)
    const pong = await client.request(Subjects.echo(run), ping('small'), { timeoutMs: 10_000 })
    assert.equal((pong.payload as { data: string }).data, 'small')
    assert.equal(procs[0]!.child.exitCode, null)
    const stats = await serviceData(client, 'triad-echo', run)
    assert.equal(stats.repliesTooLarge, 3)
    assert.equal(stats.repliesUnsent, 0)
  })

  it('an env.start with a task name of about 1 MB gets reply_too_large (the unknown-task reply quotes it); the controller stays up and counts it', async () => {
    // The reply quotes the name with some 50 bytes around it: a request 8 bytes under the limit
    // gives a reply over it.
    const task = grown((t) => EnvStart.make({ task: t }), limit - 8)
    await rejectsTooLarge(
      client.request(Subjects.envStart(run), EnvStart.make({ task }), { timeoutMs: 10_000 }),
      limit,
    )
    // Still serving: a small unknown task gets its ordinary error reply.
    await assert.rejects(
      client.request(Subjects.envStart(run), EnvStart.make({ task: 'nope' }), { timeoutMs: 10_000 }),
      (err: unknown) =>
        err instanceof RemoteError && err.code === ErrorCode.NotFound && /nope/.test(err.message),
    )
    assert.equal(procs[1]!.child.exitCode, null)
    const stats = await serviceData(client, 'triad-env-controller', run)
    assert.equal(stats.repliesTooLarge, 1)
  })

  it('a request over max_payload fails in the client with PayloadTooLargeError naming size and limit, before sending', async () => {
    const data = 'x'.repeat(limit)
    await assert.rejects(
      client.request(Subjects.echo(run), EchoPing.make({ seq: 2, sentAt: 0, data }), { timeoutMs: 10_000 }),
      (err: unknown) => {
        assert.ok(err instanceof PayloadTooLargeError, String(err))
        assert.equal(err.limit, limit)
        assert.ok(err.bytes > limit)
        assert.equal(
          err.message,
          `message to ${Subjects.echo(run)} is ${err.bytes} bytes, over the server's max_payload of ${limit} bytes`,
        )
        return true
      },
    )
    assert.throws(
      () => client.publish(Subjects.echo(run), EchoPing.make({ seq: 3, sentAt: 0, data })),
      PayloadTooLargeError,
    )
  })
})

describe('actors/runtime/nats-transport - a reply the connection cannot send', () => {
  const nats = suiteNatsServer('triad-rtl2-')
  const Close = defineMessage('test.close', z.object({}))

  it('a handler whose connection closed before its reply: counted as unsent, nothing thrown into the process', async () => {
    const server = await connectNats({ servers: nats.url, run: 'rtl2', role: 'server', id: '0' })
    const client = await connectNats({ servers: nats.url, run: 'rtl2', role: 'client', id: '0' })
    const served = await server.serve('triad.rtl2.close', {
      accepts: new MessageRegistry([Close]),
      handler: async (m) => {
        await server.nc.close()
        return m
      },
    })
    // The requester hears nothing back (a timeout, or no responders once the server saw the
    // subscription go); the point is the serving side.
    await assert.rejects(
      client.request('triad.rtl2.close', Close.make({}), { timeoutMs: 1_000, retryNoResponders: false }),
      (err: unknown) => err instanceof RequestTimeoutError || err instanceof NoRespondersError,
    )
    assert.deepEqual(served.stats(), {
      handled: 1,
      errors: 0,
      invalid: 0,
      repliesTooLarge: 0,
      repliesUnsent: 1,
    })
    await client.close()
    await server.close()
  })
})
