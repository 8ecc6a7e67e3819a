import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import {
  type ActorSystem,
  connectNats,
  type NatsServer,
  type NatsTransport,
  startActorSystem,
  startEnvController,
  startNatsServer,
  tasks,
} from '../../../actors/index.ts'
import type { EnvController } from '../../../actors/testing.ts'
import {
  type EnvAck,
  EnvCancelAll,
  EnvDrain,
  type Envelope,
  EnvInteract,
  EnvList,
  EnvStart,
  EnvWorkerLost,
  MessageRegistry,
  type PayloadOf,
  RemoteError,
  Subjects,
} from '../../../protocols/index.ts'
import { startTriad, type TriadProcess } from '../../support/triad-process.ts'
import { calls } from './fixtures.ts'

type Started = { session: string; worker: string }
type Workers = {
  workers: { worker: string; state: string; active: number }[]
  counts: Record<string, number>
}

describe('actors/environment/controller - env workers in other OS processes over real NATS', () => {
  const run = 'envctl'
  let nats: NatsServer
  let client: NatsTransport
  let system: ActorSystem
  let controller: EnvController
  const workers: Record<string, TriadProcess> = {}
  const lostEvents: PayloadOf<typeof EnvWorkerLost>[] = []

  const request = (subject: string, m: Envelope, timeoutMs = 10_000) =>
    client.request(subject, m, { timeoutMs })
  const start = async (task = 'calc') =>
    (await request(Subjects.envStart(run), EnvStart.make({ task, difficulty: 1 }))).payload as Started
  const list = async () => (await request(Subjects.envAdmin(run), EnvList.make({}))).payload as Workers
  /** Waits until the controller's list satisfies `ok` (deadline 15 s). */
  const until = async (ok: (w: Workers) => boolean, what: string) => {
    const deadline = Date.now() + 15_000
    for (;;) {
      const w = await list()
      if (ok(w)) return w
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(w)}`)
      await new Promise<void>((r) => client.nc.flush().then(() => setImmediate(r)))
    }
  }

  before(async () => {
    nats = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'triad-nats-')) })
    client = await connectNats({ servers: nats.url, run, role: 'tester', id: '0' })
    client.subscribe(Subjects.envEvents(run), {
      accepts: new MessageRegistry([EnvWorkerLost]),
      handler: (m) => lostEvents.push(m.payload as PayloadOf<typeof EnvWorkerLost>),
    })
    system = startActorSystem({ name: 'controller' })
    controller = await startEnvController(system, client, { run, tasks, checkMs: 50 })
    for (const id of ['wa', 'wb']) {
      workers[id] = startTriad([
        'env',
        'worker',
        '--nats',
        nats.url,
        '--run',
        run,
        '--id',
        id,
        '--tasks',
        'calc,maze,sql',
        '--capacity',
        '4',
        '--heartbeat-ms',
        '250',
      ])
    }
    await Promise.all(Object.values(workers).map((w) => w.waitForLine((j) => j.event === 'ready')))
    await until((w) => w.workers.filter((x) => x.state === 'live').length === 2, 'two live workers')
  })

  after(async () => {
    await Promise.all(Object.values(workers).map((w) => w.kill()))
    await controller?.stop()
    await system?.stop()
    await client?.close()
    await nats?.stop()
  })

  it('controller - starts spread over the workers with the most free places, interact goes to the sticky worker', async () => {
    const s = [await start(), await start(), await start(), await start()]
    const per = (id: string) => s.filter((x) => x.worker === Subjects.envWorker(run, id)).length
    assert.equal(per('wa'), 2)
    assert.equal(per('wb'), 2)
    const step = await request(
      s[0]!.worker,
      EnvInteract.make({ session: s[0]!.session, message: calls(['calculator', '{"expression":"2*21"}']) }),
    )
    assert.equal((step.payload as { messages: { content: string }[] }).messages[0]!.content, '42')
    const c = await request(Subjects.envAdmin(run), EnvCancelAll.make({}))
    assert.equal((c.payload as PayloadOf<typeof EnvAck>).sessions, 4)
  })

  it('controller - an unknown task is not_found listing the tasks the workers serve', async () => {
    await assert.rejects(
      start('chess'),
      (e: unknown) =>
        e instanceof RemoteError &&
        e.code === 'not_found' &&
        /unknown task 'chess'; valid tasks: calc, maze/.test(e.message),
    )
  })

  it('controller - a worker killed mid-episode: its sessions fail before their deadlines, new sessions go to the survivor', async () => {
    const A = Subjects.envWorker(run, 'wa')
    const all = [await start(), await start()]
    // An sql session on wa, for a request in flight when wa dies.
    let sqlOnA: Started | undefined
    while (!sqlOnA) {
      const x = await start('sql')
      all.push(x)
      if (x.worker === A) sqlOnA = x
    }
    const onA = all.filter((x) => x.worker === A)
    const onB = all.length - onA.length
    // Each calc session on wa is mid-episode: one step done.
    for (const x of onA.filter((y) => y !== sqlOnA))
      await request(
        x.worker,
        EnvInteract.make({ session: x.session, message: calls(['calculator', '{"expression":"1+1"}']) }),
      )
    const deadlineMs = 10_000
    const t0 = Date.now()
    const slow = calls([
      'execute_sql',
      JSON.stringify({
        query: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c',
      }),
    ])
    const inFlight = request(
      sqlOnA.worker,
      EnvInteract.make({ session: sqlOnA.session, message: slow }),
      deadlineMs,
    )
    await client.nc.flush()
    workers.wa!.child.kill('SIGKILL')
    await workers.wa!.exited
    await assert.rejects(
      inFlight,
      (e: unknown) =>
        e instanceof RemoteError &&
        e.code === 'unavailable' &&
        /'wa' was lost.*in flight failed/.test(e.message),
    )
    assert.ok(Date.now() - t0 < deadlineMs / 2, `in-flight failure took ${Date.now() - t0} ms`)
    for (const x of onA) {
      const t1 = Date.now()
      await assert.rejects(
        request(
          x.worker,
          EnvInteract.make({ session: x.session, message: calls(['submit', '{"answer":2}']) }),
          deadlineMs,
        ),
        (e: unknown) =>
          e instanceof RemoteError &&
          e.code === 'unavailable' &&
          e.message.includes("env worker 'wa' was lost") &&
          e.message.includes(`session '${x.session}' failed`),
      )
      assert.ok(Date.now() - t1 < deadlineMs / 2, `failure took ${Date.now() - t1} ms`)
    }
    const lost = lostEvents.find((e) => e.worker === 'wa')
    assert.deepEqual(lost?.sessions.sort(), onA.map((x) => x.session).sort())
    const w = await until((w) => w.workers.find((x) => x.worker === 'wa')?.state === 'silent', 'wa silent')
    assert.equal(w.counts.lost_sessions, onA.length)
    assert.ok(w.counts.failed_in_flight! >= 1)
    // The survivor takes every new session until it is full; then starts are refused with the reason.
    const more: Started[] = []
    for (let i = 0; i < 4 - onB; i++) more.push(await start())
    assert.ok(more.every((x) => x.worker === Subjects.envWorker(run, 'wb')))
    await assert.rejects(
      start(),
      (e: unknown) =>
        e instanceof RemoteError && e.code === 'unavailable' && /no live env worker has room/.test(e.message),
    )
    await request(Subjects.envAdmin(run), EnvCancelAll.make({}))
  })

  it('controller - a drained worker takes no new sessions', async () => {
    await until((w) => w.workers.find((x) => x.worker === 'wb')?.active === 0, 'wb empty')
    const ack = await request(Subjects.envAdmin(run), EnvDrain.make({ worker: 'wb' }))
    assert.equal(ack.type, 'env.ack')
    await assert.rejects(start(), (e: unknown) => e instanceof RemoteError && e.code === 'unavailable')
    const w = await list()
    assert.equal(w.workers.find((x) => x.worker === 'wb')?.state, 'draining')
    assert.ok(controller.counts().refused! >= 2)
  })

  it('controller - its counts show through the NATS Services API ($SRV.STATS)', async () => {
    const svc = new Svcm(client.nc as never).client({ strategy: 'timer', maxWait: 500 })
    const all = []
    for await (const s of await svc.stats('triad-env-controller')) all.push(s)
    assert.equal(all.length, 1)
    const data = all[0]!.endpoints![0]!.data as Record<string, number>
    const mine = controller.counts()
    assert.equal(data.started, mine.started)
    assert.equal(data.lost_sessions, 2)
    assert.equal(data.lost_workers, 1)
    assert.equal(data.workers_silent, 1)
    assert.equal(data.workers_draining, 1)
    assert.ok(data.started! >= 10)
  })
})
