import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  echoReplies,
  type NatsServer,
  type NatsTransport,
  remoteActor,
  startActorSystem,
  startNatsServer,
} from '../../../actors/index.ts'
import { type Behaviour, NoRespondersError, RequestTimeoutError } from '../../../actors/testing.ts'
import { EchoPing, Subjects } from '../../../protocols/index.ts'
import { runTriad, startTriad, type TriadProcess } from '../../support/triad-process.ts'

describe('actors/runtime - actors in separate OS processes over a real NATS server', () => {
  let nats: NatsServer
  let workers: TriadProcess[] = []
  let client: NatsTransport
  const run = 'proc'

  before(async () => {
    nats = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'triad-nats-')) })
    workers = ['w1', 'w2'].map((id) =>
      startTriad(['worker', '--role', 'echo', '--nats', nats.url, '--run', run, '--id', id]),
    )
    await Promise.all(workers.map((w) => w.waitForLine((j) => j.event === 'ready')))
    client = await connectNats({ servers: nats.url, run, role: 'tester', id: '0' })
  })

  after(async () => {
    await client?.close()
    await Promise.all(workers.map((w) => w.kill()))
    await nats?.stop()
  })

  it('processes - an actor here asks an actor in another process and gets its reply', async () => {
    // A local actor whose behaviour is to ask the remote echo: actor -> NATS -> actor in another process.
    const echo = remoteActor(client, Subjects.echo(run), { replies: echoReplies })
    const asker: Behaviour<object> = { init: () => ({}), receive: (_s, m) => echo.ask(m, 5_000) }
    const system = startActorSystem({ name: 'tester' })
    const ref = system.spawn('asker', asker)
    const reply = await ref.ask(EchoPing.make({ seq: 7, sentAt: 1, data: { hello: [1, 2, 3] } }), 5_000)
    assert.equal(reply.type, 'echo.pong')
    const p = reply.payload as { seq: number; data: unknown; by: string }
    assert.equal(p.seq, 7)
    assert.deepEqual(p.data, { hello: [1, 2, 3] })
    assert.ok(['w1', 'w2'].includes(p.by))
    await system.stop()
  })

  it('processes - triad status lists both services, connections per role and subscriptions', async () => {
    const r = await runTriad(['status', '--nats', nats.url, '--monitor', nats.monitorUrl!, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout) as {
      services: { name: string; metadata: Record<string, string>; data: Record<string, number> }[]
      server: {
        healthy: boolean
        connectionsByRole: Record<string, number>
        subscriptionsBySubject: Record<string, number>
      }
    }
    const echoes = report.services.filter((s) => s.name === 'triad-echo')
    assert.deepEqual(echoes.map((s) => s.metadata.by).sort(), ['w1', 'w2'])
    assert.equal(typeof echoes[0]!.data.restarts, 'number')
    assert.equal(report.server.healthy, true)
    assert.equal(report.server.connectionsByRole.echo, 2)
    assert.equal(report.server.subscriptionsBySubject[Subjects.echo(run)], 2)
  })

  it('processes - the NATS server killed and restarted during traffic: each request succeeds or fails clearly by its deadline', async () => {
    const echo = remoteActor(client, Subjects.echo(run), { replies: echoReplies })
    const outcomes = { ok: 0, timeout: 0, noResponders: 0 }
    const deadlineMs = 1_500
    let seq = 0
    const ask = async () => {
      const started = Date.now()
      try {
        await echo.ask(EchoPing.make({ seq: seq++, sentAt: started, data: null }), deadlineMs)
        outcomes.ok++
      } catch (err) {
        // Every failure is one of the two clear errors, and comes by the deadline (+ slack for a loaded machine).
        assert.ok(err instanceof RequestTimeoutError || err instanceof NoRespondersError, String(err))
        assert.ok(Date.now() - started < deadlineMs + 1_000, `failed late: ${Date.now() - started} ms`)
        if (err instanceof RequestTimeoutError) outcomes.timeout++
        else outcomes.noResponders++
      }
    }
    await Promise.all(Array.from({ length: 8 }, ask))
    assert.equal(outcomes.ok, 8)
    await nats.kill()
    const during = Promise.all(Array.from({ length: 8 }, ask))
    await nats.restart()
    await during
    // After the restart every client reconnects; requests succeed again within a bounded time.
    const recoverBy = Date.now() + 15_000
    let recovered = false
    while (!recovered && Date.now() < recoverBy) {
      try {
        await echo.ask(EchoPing.make({ seq: seq++, sentAt: Date.now(), data: null }), 2_000)
        recovered = true
      } catch (err) {
        assert.ok(err instanceof RequestTimeoutError || err instanceof NoRespondersError, String(err))
      }
    }
    assert.equal(recovered, true)
    // Both worker processes survived the outage.
    for (const w of workers) assert.equal(w.child.exitCode, null, w.stderr())
    assert.equal(outcomes.ok + outcomes.timeout + outcomes.noResponders, 16)
  })
})
