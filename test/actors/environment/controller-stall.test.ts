import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  InProcessTransport,
  startActorSystem,
  startEnvController,
  startEnvWorker,
  tasks,
} from '../../../actors/index.ts'
import {
  EnvHeartbeat,
  EnvList,
  EnvStart,
  EnvWorkerLost,
  MessageRegistry,
  type PayloadOf,
  Subjects,
} from '../../../protocols/index.ts'

type Workers = { workers: { worker: string; state: string }[]; counts: Record<string, number> }

/**
 * The controller and a worker in one process (as in a one-process run): a stall of the whole
 * process (a long synchronous computation, like a learner step) stops the heartbeats and the
 * controller's checks alike, so it is not a lost worker; a worker that stops beating while the
 * controller listens still is.
 */
describe('actors/environment/controller - a stalled process is not a lost worker', () => {
  it('controller - after a stall of three heartbeat intervals and more, the worker takes sessions and is not lost; a worker that stops beating is', async () => {
    const run = 'stall'
    const t = new InProcessTransport()
    const system = startActorSystem({ name: 'stall' })
    const lost: PayloadOf<typeof EnvWorkerLost>[] = []
    let onLost = () => {}
    t.subscribe(Subjects.envEvents(run), {
      accepts: new MessageRegistry([EnvWorkerLost]),
      handler: (m) => {
        lost.push(m.payload as PayloadOf<typeof EnvWorkerLost>)
        onLost()
      },
    })
    let onBeat = () => {}
    t.subscribe(Subjects.envHeartbeat(run), {
      accepts: new MessageRegistry([EnvHeartbeat]),
      handler: () => onBeat(),
    })
    /** Resolves at the next event `set` hooks, or fails after `ms`. */
    const next = (set: (f: () => void) => void, ms: number, what: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)
        set(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    const list = async () =>
      (await t.request(Subjects.envAdmin(run), EnvList.make({}), { timeoutMs: 5_000 })).payload as Workers
    const controller = await startEnvController(system, t, { run, tasks, checkMs: 50 })
    const worker = await startEnvWorker(system, t, { run, id: 'w', tasks, capacity: 4, heartbeatMs: 100 })
    try {
      await next((f) => (onBeat = f), 5_000, 'heartbeat')
      await next((f) => (onBeat = f), 5_000, 'heartbeat')
      assert.deepEqual(
        (await list()).workers.map((w) => [w.worker, w.state]),
        [['w', 'live']],
      )

      // The whole process stalls for 10 heartbeat intervals.
      const end = Date.now() + 1_000
      while (Date.now() < end) {}
      const started = await t.request(
        Subjects.envStart(run),
        EnvStart.make({ task: 'calc', difficulty: 1 }),
        {
          timeoutMs: 5_000,
        },
      )
      assert.equal((started.payload as { worker: string }).worker, Subjects.envWorker(run, 'w'))
      await next((f) => (onBeat = f), 5_000, 'heartbeat after the stall')
      await new Promise((r) => setTimeout(r, 150)) // a few controller checks
      const after = await list()
      assert.equal(after.counts.lost_workers, 0)
      assert.equal(lost.length, 0)
      assert.equal(after.workers[0]!.state, 'live')

      // A worker that stops beating while the controller listens is lost after three intervals.
      await worker.stop()
      await next((f) => (onLost = f), 5_000, 'env.worker_lost')
      assert.deepEqual(
        lost.map((l) => l.worker),
        ['w'],
      )
    } finally {
      await worker.stop()
      await controller.stop()
      await system.stop()
      await t.close()
    }
  })
})
