import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  connectNats,
  NatsServerError,
  natsServerEventLine,
  startNatsServer,
  streamManager,
  superviseNatsServer,
  trajectoryStreamName,
} from '../../../actors/index.ts'
import {
  ensureTrajectoryStream,
  type NatsServerEvent,
  openTrajectoryPublisher,
} from '../../../actors/testing.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'
import { waitUntil } from '../../support/process-tree.ts'
import { within } from '../../support/within.ts'

/** A one-sample group (what the stream holds across the restart). */
const group: TrajectoryGroupPayload = {
  group_id: 'g0',
  task: 'calc',
  index: 0,
  seed: 1,
  difficulty: 1,
  started_version: 0,
  samples: [
    {
      tokens: Int32Array.from([1, 2, 3]),
      loss_mask: Uint8Array.from([0, 1, 1]),
      logprobs: Float32Array.from([0, -1, -1]),
      versions: Int32Array.from([-1, 0, 0]),
      turn_starts: Int32Array.from([1]),
      reward: 1,
      status: 'completed',
      turns: 1,
      metrics: {},
      stale_turns: 0,
    },
  ],
}

/** Resolves once `server` listens on `port` of 127.0.0.1. */
function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
}

describe('actors/launcher/nats-server-supervision', () => {
  it('superviseNatsServer - a server killed with SIGKILL is restarted on its port with its JetStream store; a client reconnects and the stream keeps its group', async () => {
    const server = await startNatsServer({
      storeDir: mkdtempSync(join(tmpdir(), 'triad-natssup-')),
      monitorPort: false,
    })
    const events: NatsServerEvent[] = []
    const supervision = superviseNatsServer(server, (e) => events.push(e))
    const t = await connectNats({ servers: server.url, run: 'sup', role: 'test', id: '0' })
    try {
      await ensureTrajectoryStream(t, { run: 'sup', maxGroups: 4 })
      await openTrajectoryPublisher(t, 'sup').publish(group)
      const jsm = await streamManager(t.nc)
      const first = server.pid()!
      process.kill(first, 'SIGKILL')
      await waitUntil(
        () => events.some((e) => e.type === 'restarted'),
        20_000,
        () => `events: ${JSON.stringify(events)}`,
      )
      const second = server.pid()!
      assert.notEqual(second, first)
      assert.deepEqual(events, [
        { type: 'exited', pid: first, code: null, signal: 'SIGKILL', restartInMs: 200 },
        { type: 'restarted', pid: second, restarts: 1 },
      ])
      assert.equal(
        natsServerEventLine(events[0]!, server.port),
        `nats-server (pid ${first}) exited (SIGKILL); restarting in 200 ms on port ${server.port}`,
      )
      assert.equal(
        natsServerEventLine(events[1]!, server.port),
        `nats-server restarted (pid ${second}) on port ${server.port} with its store`,
      )
      // The same client, reconnected, finds the group in the file store.
      const deadline = Date.now() + 20_000
      let info: Awaited<ReturnType<typeof jsm.streams.info>> | undefined
      while (!info && Date.now() < deadline)
        info = await jsm.streams.info(trajectoryStreamName('sup')).catch(() => undefined)
      assert.equal(info?.state.messages, 1)
      assert.equal(supervision.restarts(), 1)
    } finally {
      supervision.stop()
      await t.close()
      await server.stop()
    }
  })

  it('superviseNatsServer - a server that cannot come back (its port taken) is given up past the limit: one line, and failed rejects naming the port', async () => {
    const server = await startNatsServer({ monitorPort: false })
    const events: NatsServerEvent[] = []
    const squatter = createServer()
    const supervision = superviseNatsServer(
      server,
      (e) => {
        events.push(e)
        // Another process takes the port in the backoff before the restart.
        if (e.type === 'exited') void listen(squatter, server.port)
      },
      {
        maxRestarts: 1,
        withinMs: 60_000,
        backoff: { initialMs: 300, maxMs: 300, factor: 1 },
        onLimit: 'stop',
      },
    )
    try {
      const pid = server.pid()!
      process.kill(pid, 'SIGKILL')
      const err = await within(
        supervision.failed.then(
          () => undefined,
          (e: unknown) => e,
        ),
        20_000,
        () => `events: ${JSON.stringify(events)}`,
      )
      assert.ok(err instanceof NatsServerError)
      assert.equal(
        (err as Error).message,
        `nats-server on port ${server.port} cannot come back: port ${server.port} is in use by another process`,
      )
      assert.deepEqual(
        events.map((e) => e.type),
        ['exited', 'gave-up'],
      )
      assert.equal(
        natsServerEventLine(events[1]!, server.port),
        `nats-server cannot come back after 1 restarts: port ${server.port} is in use by another process`,
      )
    } finally {
      supervision.stop()
      squatter.close()
      await server.stop()
    }
  })
})
