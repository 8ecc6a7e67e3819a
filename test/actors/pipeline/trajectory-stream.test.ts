import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  BufferFullError,
  connectNats,
  ensureTrajectoryStream,
  type NatsServer,
  type NatsTransport,
  startNatsServer,
  TrajectoryConsumer,
  TrajectoryPublisher,
} from '../../../actors/index.ts'
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

describe('actors/pipeline/trajectory-stream - groups through JetStream', () => {
  let nats: NatsServer
  let t: NatsTransport
  before(async () => {
    nats = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'triad-js-')), monitorPort: false })
    t = await connectNats({ servers: nats.url, run: 'ts', role: 'test', id: '0' })
  })
  after(async () => {
    await t.close()
    await nats.stop()
  })

  it('stream - groups keep their typed arrays; take waits for the minimum and returns all ready', async () => {
    await ensureTrajectoryStream(t.nc, { run: 'ts1', maxGroups: 10 })
    const pub = new TrajectoryPublisher(t.nc, 'ts1')
    for (let i = 0; i < 3; i++) await pub.publish(fakeGroup(`g${i}`))
    const consumer = await TrajectoryConsumer.open(t.nc, 'ts1')
    const taken = await consumer.take(2, 10, 5_000)
    assert.equal(taken.length, 3)
    assert.deepEqual(
      taken.map((g) => g.group.group_id),
      ['g0', 'g1', 'g2'],
    )
    const s = taken[0]!.group.samples[1]!
    assert.ok(s.logprobs instanceof Float32Array)
    assert.ok(s.versions instanceof Int32Array)
    assert.deepEqual([...s.loss_mask], [0, 0, 1, 1])
    assert.equal(s.reward, 1)
    await consumer.ack(taken)
    assert.equal(await consumer.pending(), 0)
  })

  it('stream - a full buffer makes the publisher wait until the learner acknowledges', async () => {
    await ensureTrajectoryStream(t.nc, { run: 'ts2', maxGroups: 2 })
    const pub = new TrajectoryPublisher(t.nc, 'ts2')
    await pub.publish(fakeGroup('a'))
    await pub.publish(fakeGroup('b'))
    await assert.rejects(pub.publish(fakeGroup('c'), 300), BufferFullError)
    const consumer = await TrajectoryConsumer.open(t.nc, 'ts2')
    const waiting = pub.publish(fakeGroup('d'), 20_000)
    const first = await consumer.take(2, 2, 5_000)
    assert.equal(first.length, 2)
    await consumer.ack(first)
    await waiting
    assert.ok(pub.waits >= 1)
    const next = await consumer.take(1, 5, 5_000)
    assert.deepEqual(
      next.map((g) => g.group.group_id),
      ['d'],
    )
  })

  it('stream - groups taken and not acknowledged are delivered again to the next learner', async () => {
    await ensureTrajectoryStream(t.nc, { run: 'ts3', maxGroups: 10, ackWaitMs: 1_000 })
    const pub = new TrajectoryPublisher(t.nc, 'ts3')
    await pub.publish(fakeGroup('x'))
    const c1 = await TrajectoryConsumer.open(t.nc, 'ts3')
    const got = await c1.take(1, 10, 5_000)
    assert.equal(got[0]!.redeliveries, 0)
    // No ack: after ack_wait the group comes back.
    const c2 = await TrajectoryConsumer.open(t.nc, 'ts3')
    const again = await c2.take(1, 10, 10_000)
    assert.equal(again[0]!.group.group_id, 'x')
    assert.equal(again[0]!.seq, got[0]!.seq)
    assert.ok(again[0]!.redeliveries >= 1)
  })

  it('stream - a malformed message is terminated and counted, the good ones still arrive', async () => {
    await ensureTrajectoryStream(t.nc, { run: 'ts4', maxGroups: 10 })
    t.publishBytes('triad.ts4.trajectory.done.calc', new Uint8Array([1, 2, 3]))
    await t.flush()
    await new TrajectoryPublisher(t.nc, 'ts4').publish(fakeGroup('ok'))
    const c = await TrajectoryConsumer.open(t.nc, 'ts4')
    const got = await c.take(1, 10, 5_000)
    assert.deepEqual(
      got.map((g) => g.group.group_id),
      ['ok'],
    )
    assert.equal(c.invalid, 1)
  })
})
