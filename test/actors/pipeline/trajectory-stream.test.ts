import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  type NatsServer,
  startNatsServer,
  streamManager,
  type Transport,
  trajectoryStreamName,
} from '../../../actors/index.ts'
import {
  addDelivered,
  BufferFullError,
  encodeGroup,
  ensureTrajectoryStream,
  InProcessTrajectoryPublisher,
  openTrajectoryConsumer,
  openTrajectoryPublisher,
  PublisherClosedError,
  type TakenGroup,
  trajectorySubject,
} from '../../../actors/testing.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'

export function fakeGroup(id: string, task = 'calc', samples = 2, version = 0): TrajectoryGroupPayload {
  return {
    group_id: id,
    task,
    index: 0,
    seed: 1,
    difficulty: 1,
    started_version: version,
    samples: Array.from({ length: samples }, (_, i) => ({
      tokens: Int32Array.from([1, 2, 3, 4]),
      loss_mask: Uint8Array.from([0, 0, 1, 1]),
      logprobs: Float32Array.from([0, 0, -0.5, -1]),
      versions: Int32Array.from([-1, -1, version, version]),
      turn_starts: Int32Array.from([2]),
      reward: i,
      status: 'completed' as const,
      turns: 1,
      metrics: {},
      stale_turns: 0,
    })),
  }
}

const ids = (groups: readonly TakenGroup[]) => groups.map((g) => g.group.group_id)

/** A medium of the stream: the transport it is selected from, and how to put garbage into it. */
interface Medium {
  t: Transport
  /** Puts bytes that are not a valid group into the run's stream. */
  garbage(run: string, bytes: Uint8Array): Promise<void>
  close(): Promise<void>
}

/**
 * One contract, two streams: everything here holds for the JetStream stream on a real server and
 * for the in-process buffer alike (see actors/pipeline/trajectory-stream.ts).
 */
function contract(name: string, open: () => Promise<Medium>) {
  describe(`actors/pipeline/trajectory-stream contract - ${name}`, () => {
    let m: Medium
    let t: Transport
    before(async () => {
      m = await open()
      t = m.t
    })
    after(async () => {
      await m.close()
    })

    it('stream - groups keep their typed arrays; take waits for the minimum and returns all ready', async () => {
      await ensureTrajectoryStream(t, { run: 'ts1', maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, 'ts1')
      const consumer = await openTrajectoryConsumer(t, 'ts1')
      // The minimum arrives after take started waiting.
      const taking = consumer.take(2, 10, 5_000)
      const seqs: number[] = []
      for (let i = 0; i < 3; i++) seqs.push(await pub.publish(fakeGroup(`g${i}`)))
      const first = await taking
      const taken = [...first, ...(first.length < 3 ? await consumer.take(3 - first.length, 10, 5_000) : [])]
      assert.deepEqual(ids(taken), ['g0', 'g1', 'g2'])
      assert.deepEqual(
        taken.map((g) => g.seq),
        seqs,
      )
      assert.ok(seqs[0]! < seqs[1]! && seqs[1]! < seqs[2]!)
      const s = taken[0]!.group.samples[1]!
      assert.ok(s.logprobs instanceof Float32Array)
      assert.ok(s.versions instanceof Int32Array)
      assert.deepEqual([...s.loss_mask], [0, 0, 1, 1])
      assert.equal(s.reward, 1)
      assert.equal(taken[0]!.redeliveries, 0)
      await consumer.ack(taken)
      assert.equal(await consumer.pending(), 0)
    })

    it('stream - take returns fewer than the minimum only at its deadline', async () => {
      await ensureTrajectoryStream(t, { run: 'ts-few', maxGroups: 10 })
      await openTrajectoryPublisher(t, 'ts-few').publish(fakeGroup('only'))
      const consumer = await openTrajectoryConsumer(t, 'ts-few')
      const start = Date.now()
      const got = await consumer.take(3, 10, 1_000)
      assert.deepEqual(ids(got), ['only'])
      assert.ok(Date.now() - start >= 900, `returned after ${Date.now() - start} ms`)
    })

    it('stream - an aborted signal ends take at once; a group published after it is not swallowed', {
      timeout: 10_000,
    }, async () => {
      await ensureTrajectoryStream(t, { run: 'ts-abort', maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, 'ts-abort')
      const consumer = await openTrajectoryConsumer(t, 'ts-abort')
      const abort = new AbortController()
      const start = Date.now()
      const taking = consumer.take(1, 10, 60_000, abort.signal)
      abort.abort()
      assert.deepEqual(await taking, [])
      // A JetStream pull lasts at least 1 s: an abort that came during it cut it short.
      assert.ok(Date.now() - start < 1_000, `returned after ${Date.now() - start} ms`)
      assert.deepEqual(await consumer.take(1, 10, 60_000, AbortSignal.abort()), [])
      await pub.publish(fakeGroup('after'))
      assert.deepEqual(ids(await consumer.take(1, 10, 5_000)), ['after'])
    })

    it('stream - a full buffer makes the publisher wait until the learner acknowledges', async () => {
      await ensureTrajectoryStream(t, { run: 'ts2', maxGroups: 2 })
      const pub = openTrajectoryPublisher(t, 'ts2')
      await pub.publish(fakeGroup('a'))
      await pub.publish(fakeGroup('b'))
      await assert.rejects(pub.publish(fakeGroup('c'), 300), BufferFullError)
      const consumer = await openTrajectoryConsumer(t, 'ts2')
      const waiting = pub.publish(fakeGroup('d'), 20_000)
      const first = await consumer.take(2, 2, 5_000)
      assert.deepEqual(ids(first), ['a', 'b'])
      await consumer.ack(first)
      await waiting
      assert.ok(pub.waits >= 1)
      const next = await consumer.take(1, 5, 5_000)
      assert.deepEqual(ids(next), ['d'])
      await consumer.ack(next)
    })

    it('stream - a publisher waiting for room fails at once when closed, and so does every later publish', async () => {
      await ensureTrajectoryStream(t, { run: 'ts-close', maxGroups: 1 })
      const pub = openTrajectoryPublisher(t, 'ts-close')
      await pub.publish(fakeGroup('a'))
      const start = Date.now()
      const waiting = pub.publish(fakeGroup('b'), 60_000)
      setImmediate(() => pub.close())
      await assert.rejects(waiting, PublisherClosedError)
      assert.ok(Date.now() - start < 5_000)
      await assert.rejects(pub.publish(fakeGroup('c')), PublisherClosedError)
    })

    it('stream - the same group published twice is stored once', async () => {
      await ensureTrajectoryStream(t, { run: 'ts-dup', maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, 'ts-dup')
      const a = await pub.publish(fakeGroup('same'))
      const b = await pub.publish(fakeGroup('same'))
      assert.equal(a, b)
      const consumer = await openTrajectoryConsumer(t, 'ts-dup')
      assert.equal(await consumer.pending(), 1)
      const got = await consumer.take(1, 10, 5_000)
      assert.deepEqual(ids(got), ['same'])
      await consumer.ack(got)
    })

    it('stream - a publisher started before the stream exists waits for it', async () => {
      const pub = openTrajectoryPublisher(t, 'ts-late')
      const waiting = pub.publish(fakeGroup('early'), 20_000)
      await new Promise((r) => setImmediate(r))
      await ensureTrajectoryStream(t, { run: 'ts-late', maxGroups: 10 })
      await waiting
      const got = await (await openTrajectoryConsumer(t, 'ts-late')).take(1, 10, 5_000)
      assert.deepEqual(ids(got), ['early'])
    })

    it('stream - the consumer of a stream nobody created is an error that says not found', async () => {
      await assert.rejects(openTrajectoryConsumer(t, 'ts-missing'), /not found/i)
    })

    it('stream - groups taken and not acknowledged are delivered again to the next learner', async () => {
      await ensureTrajectoryStream(t, { run: 'ts3', maxGroups: 10, ackWaitMs: 1_000 })
      const pub = openTrajectoryPublisher(t, 'ts3')
      await pub.publish(fakeGroup('x'))
      const c1 = await openTrajectoryConsumer(t, 'ts3')
      const got = await c1.take(1, 10, 5_000)
      assert.equal(got[0]!.redeliveries, 0)
      // No ack: after ack_wait the group comes back.
      const c2 = await openTrajectoryConsumer(t, 'ts3')
      const again = await c2.take(1, 10, 10_000)
      assert.equal(again[0]!.group.group_id, 'x')
      assert.equal(again[0]!.seq, got[0]!.seq)
      assert.ok(again[0]!.redeliveries >= 1)
      await c2.ack(again)
      assert.equal(await c2.pending(), 0)
    })

    it('stream - a group kept alive is not delivered again while held', async () => {
      await ensureTrajectoryStream(t, { run: 'ts-alive', maxGroups: 10, ackWaitMs: 1_000 })
      await openTrajectoryPublisher(t, 'ts-alive').publish(fakeGroup('held'))
      const c1 = await openTrajectoryConsumer(t, 'ts-alive')
      const held = await c1.take(1, 10, 5_000)
      const keep = setInterval(() => c1.keepAlive(held), 250)
      try {
        const c2 = await openTrajectoryConsumer(t, 'ts-alive')
        assert.deepEqual(await c2.take(1, 10, 2_000), [])
      } finally {
        clearInterval(keep)
      }
      await c1.ack(held)
    })

    it('stream - a malformed message is dropped and counted, the good ones still arrive', async () => {
      await ensureTrajectoryStream(t, { run: 'ts4', maxGroups: 10 })
      await m.garbage('ts4', new Uint8Array([1, 2, 3]))
      await openTrajectoryPublisher(t, 'ts4').publish(fakeGroup('ok'))
      const c = await openTrajectoryConsumer(t, 'ts4')
      const got = await c.take(1, 10, 5_000)
      assert.deepEqual(ids(got), ['ok'])
      assert.equal(c.invalid, 1)
      await c.ack(got)
      assert.equal(await c.pending(), 0)
    })
  })
}

contract('JetStream on a real nats-server', async () => {
  const nats: NatsServer = await startNatsServer({
    storeDir: mkdtempSync(join(tmpdir(), 'triad-js-')),
    monitorPort: false,
  })
  const t = await connectNats({ servers: nats.url, run: 'ts', role: 'test', id: '0' })
  return {
    t,
    garbage: async (run, bytes) => {
      t.publishBytes(trajectorySubject(run, 'calc'), bytes)
      await t.flush()
    },
    close: async () => {
      await t.close()
      await nats.stop()
    },
  }
})

contract('in process', async () => {
  const t = new InProcessTransport()
  return {
    t,
    garbage: async (run, bytes) => {
      await new InProcessTrajectoryPublisher(t, run).publishBytes(bytes, 'garbage')
    },
    close: () => t.close(),
  }
})

describe('actors/pipeline/jetstream-trajectory-stream - the learner consumer of an existing run', () => {
  it('ensureTrajectoryStream - a stream made with another ack wait (an older run, resumed) gets this one; its pending groups stay', async () => {
    const nats = await startNatsServer({
      storeDir: mkdtempSync(join(tmpdir(), 'triad-js-ack-')),
      monitorPort: false,
    })
    const t = await connectNats({ servers: nats.url, run: 'ack', role: 'test', id: '0' })
    try {
      await ensureTrajectoryStream(t, { run: 'ack', maxGroups: 4, ackWaitMs: 60_000 })
      await openTrajectoryPublisher(t, 'ack').publish(fakeGroup('a0'))
      await ensureTrajectoryStream(t, { run: 'ack', maxGroups: 4, ackWaitMs: 5_000 })
      const jsm = await streamManager(t.nc)
      const info = await jsm.consumers.info(trajectoryStreamName('ack'), 'learner')
      assert.equal(info.config.ack_wait, 5_000 * 1_000_000)
      assert.equal(info.num_pending, 1)
    } finally {
      await t.close()
      await nats.stop()
    }
  })
})

describe('actors/pipeline/open-trajectory-stream - selection from the transport', () => {
  it('open-trajectory-stream - a transport of another kind is an error naming the known ones', async () => {
    const other = { kind: 'carrier-pigeon' } as unknown as Transport
    assert.throws(
      () => openTrajectoryPublisher(other, 'sel'),
      /no trajectory stream on a 'carrier-pigeon' transport \(known: nats, in-process\)/,
    )
    await assert.rejects(ensureTrajectoryStream(other, { run: 'sel', maxGroups: 1 }), TypeError)
    await assert.rejects(openTrajectoryConsumer(other, 'sel'), TypeError)
  })
})

describe('actors/pipeline/trajectory-stream - a delivered message', () => {
  it('addDelivered - appends a valid group with its redeliveries; skips one already held; garbage is invalid', () => {
    const out: TakenGroup[] = []
    const taken = addDelivered(out, { seq: 4, deliveries: 3, data: encodeGroup(fakeGroup('g4')) })
    assert.equal(taken, out[0])
    assert.deepEqual(
      out.map((g) => [g.seq, g.redeliveries, g.group.group_id]),
      [[4, 2, 'g4']],
    )
    assert.equal(addDelivered(out, { seq: 4, deliveries: 4, data: encodeGroup(fakeGroup('g4')) }), undefined)
    assert.equal(addDelivered(out, { seq: 5, deliveries: 1, data: Uint8Array.of(1, 2, 3) }), 'invalid')
    assert.deepEqual(ids(out), ['g4'])
  })
})
