import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  SessionEndedError,
  SessionHost,
  taskRegistry,
  UnknownSessionError,
  UnknownTaskError,
  WorkerUnavailableError,
} from '../../../actors/environment/index.ts'
import { EnvInteract, EnvStart } from '../../../protocols/index.ts'
import { calls, counterTask } from './fixtures.ts'

function host(capacity = 2) {
  const clock = { t: 0 }
  const h = new SessionHost({
    workerId: 'w1',
    subject: 'triad.r.env.worker.w1',
    tasks: taskRegistry([counterTask]),
    capacity,
    idleTimeoutMs: 1000,
    now: () => clock.t,
    seed: 7,
  })
  return { h, clock }
}

describe('actors/environment/session-host', () => {
  it('session-host - start answers with the worker subject, messages and tools', async () => {
    const { h } = host()
    const r = await h.start({ task: 'counter', seed: 3 })
    assert.equal(r.session, 'w1-1')
    assert.equal(r.worker, 'triad.r.env.worker.w1')
    assert.deepEqual(r.messages, [{ role: 'user', content: 'reach 3' }])
    assert.deepEqual(
      r.tools.map((t) => t.function.name),
      ['add', 'done', 'boom'],
    )
  })

  it('session-host - an unknown task lists the valid tasks', async () => {
    const { h } = host()
    await assert.rejects(
      h.start({ task: 'chess' }),
      (e: unknown) =>
        e instanceof UnknownTaskError && e.message === "unknown task 'chess'; valid tasks: counter",
    )
  })

  it('session-host - an unknown session is not_found', async () => {
    const { h } = host()
    await assert.rejects(
      h.interact({ session: 'nope', message: calls(['done', '{}']) }),
      (e: unknown) => e instanceof UnknownSessionError && e.code === 'not_found' && /'nope'/.test(e.message),
    )
    await assert.rejects(h.cancel({ session: 'nope' }), UnknownSessionError)
  })

  it('session-host - interact after done is SessionEndedError, not unknown', async () => {
    const { h } = host()
    const { session } = await h.start({ task: 'counter' })
    await h.interact({ session, message: calls(['done', '{}']) })
    await assert.rejects(h.interact({ session, message: calls(['done', '{}']) }), SessionEndedError)
    assert.equal(h.stats().active, 0)
  })

  it('session-host - a full or draining worker refuses new sessions', async () => {
    const { h } = host(1)
    await h.start({ task: 'counter' })
    await assert.rejects(
      h.start({ task: 'counter' }),
      (e: unknown) => e instanceof WorkerUnavailableError && /full/.test(e.message),
    )
    const other = host(4).h
    other.drain()
    assert.equal(other.free(), 0)
    await assert.rejects(other.start({ task: 'counter' }), /draining/)
  })

  it('session-host - idle sessions expire and then read as ended', async () => {
    const { h, clock } = host()
    const a = await h.start({ task: 'counter' })
    clock.t = 600
    const b = await h.start({ task: 'counter' })
    clock.t = 1200
    assert.deepEqual(await h.expireIdle(), [a.session])
    assert.deepEqual(h.sessionIds(), [b.session])
    assert.equal(h.stats().expired, 1)
    await assert.rejects(
      h.interact({ session: a.session, message: calls(['done', '{}']) }),
      /status 'cancelled'/,
    )
  })

  it('session-host - cancelAll ends every session', async () => {
    const { h } = host()
    await h.start({ task: 'counter' })
    await h.start({ task: 'counter' })
    assert.deepEqual(await h.cancelAll(), ['w1-1', 'w1-2'])
    assert.equal(h.stats().active, 0)
    assert.equal(h.stats().cancelled, 2)
  })

  it('session-host - handle maps protocol errors to error replies', async () => {
    const { h } = host()
    const bad = await h.handle(EnvStart.make({ task: 'chess' }))
    assert.equal(bad.type, 'error')
    assert.deepEqual((bad.payload as { code: string }).code, 'not_found')
    const ok = await h.handle(EnvStart.make({ task: 'counter' }))
    assert.equal(ok.type, 'env.started')
    const step = await h.handle(EnvInteract.make({ session: 'w1-1', message: calls(['add', '{"n":3}']) }))
    assert.equal(step.type, 'env.interacted')
    assert.equal((step.payload as { status: string }).status, 'running')
  })
})
