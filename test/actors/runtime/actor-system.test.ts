import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startActorSystem } from '../../../actors/index.ts'
import {
  ActorCrashedError,
  ActorStoppedError,
  ActorTimeoutError,
  type Behaviour,
  type Escalation,
  envelope,
  registeredName,
} from '../../../actors/testing.ts'
import type { Envelope } from '../../../protocols/index.ts'

/** A counter that crashes on `boom` and replies with its count (reset by a restart). */
const counter: Behaviour<{ count: number; inits: number }> = {
  init: () => ({ count: 0, inits: 0 }),
  receive: async (state, message) => {
    if (message.type === 'test.boom') throw new Error('boom')
    if (message.type === 'test.slow') await new Promise((r) => setTimeout(r, 200))
    state.count++
    return envelope('test.count', { count: state.count })
  },
}

const fast = { maxRestarts: 2, withinMs: 60_000, backoff: { initialMs: 1, maxMs: 1, factor: 1 } }

describe('actors/runtime/actor-system', () => {
  const system = startActorSystem({ name: 'test' })
  after(() => system.stop())

  it('actor - ask gets the reply and stats count it', async () => {
    const ref = system.spawn('a1', counter)
    const r1 = await ref.ask(envelope('test.inc', {}), 1000)
    const r2 = await ref.ask(envelope('test.inc', {}), 1000)
    assert.deepEqual(r2.payload, { count: 2 })
    assert.equal(r1.type, 'test.count')
    assert.deepEqual(ref.stats(), { handled: 2, errors: 0, restarts: 0 })
  })

  it('actor - a crash restarts the actor with fresh state and it serves the next message', async () => {
    const ref = system.spawn('a2', counter, { supervision: { ...fast, onLimit: 'stop' } })
    await ref.ask(envelope('test.inc', {}), 1000)
    await assert.rejects(ref.ask(envelope('test.boom', {}), 1000), ActorCrashedError)
    const after = await ref.ask(envelope('test.inc', {}), 1000)
    assert.deepEqual(after.payload, { count: 1 })
    assert.deepEqual(ref.stats(), { handled: 2, errors: 1, restarts: 1 })
  })

  it('actor - crashing on every message stops it after the limit instead of restarting forever', async () => {
    const ref = system.spawn('a3', counter, { supervision: { ...fast, onLimit: 'stop' } })
    for (let i = 0; i < 3; i++)
      await assert.rejects(ref.ask(envelope('test.boom', {}), 1000), ActorCrashedError)
    await ref.stopped
    assert.equal(ref.isStopped(), true)
    assert.equal(ref.stats().restarts, 2)
    await assert.rejects(ref.ask(envelope('test.inc', {}), 1000), ActorStoppedError)
  })

  it('actor - past the limit with escalate, the parent stops it and reports the failure', async () => {
    const seen: Escalation[] = []
    system.onEscalate((e) => seen.push(e))
    const ref = system.spawn('a4', counter, { supervision: { ...fast, maxRestarts: 0, onLimit: 'escalate' } })
    await assert.rejects(ref.ask(envelope('test.boom', {}), 1000), ActorCrashedError)
    await ref.stopped
    assert.equal(seen.length, 1)
    assert.match(seen[0]!.path, /\/node\/a4$/)
    assert.equal((seen[0]!.error as Error).message, 'boom')
  })

  it('actor - ask fails with ActorTimeoutError at its deadline', async () => {
    const ref = system.spawn('a5', counter)
    await assert.rejects(ref.ask(envelope('test.slow', {}), 20), (e: unknown) => {
      return e instanceof ActorTimeoutError && e.timeoutMs === 20 && /test\.slow/.test(e.message)
    })
  })

  it('actor - concurrency lets waiting handlers overlap', async () => {
    // Each handler waits until four are active at once: only possible with concurrency 4.
    let active = 0
    let peak = 0
    let release!: () => void
    const gate = new Promise<void>((r) => {
      release = r
    })
    const waiter: Behaviour<object> = {
      init: () => ({}),
      receive: async (_s, m: Envelope) => {
        active++
        peak = Math.max(peak, active)
        if (active === 4) release()
        await gate
        active--
        return m
      },
    }
    const ref = system.spawn('a6', waiter, { concurrency: 4 })
    await Promise.all(Array.from({ length: 8 }, (_, i) => ref.ask(envelope('test.x', { i }), 1000)))
    assert.equal(peak, 4)
    assert.equal(ref.stats().handled, 8)
  })

  it('actor - a duplicate live name is refused', () => {
    system.spawn('dup', counter)
    assert.throws(() => system.spawn('dup', counter), /already running/)
  })

  it('actor - a child registers a handle under a typed name, a sibling looks it up, the newest start wins', () => {
    const engine = registeredName<{ version(): number }>('test-engine')
    assert.equal(system.whereis(engine), undefined)
    const first = { version: () => 1 }
    const unregisterFirst = system.register(engine, first)
    assert.equal(system.whereis(engine)?.version(), 1)
    // A restart registers the new incarnation before the old one's late stop unregisters: the
    // late stop leaves the new one in place.
    const unregisterSecond = system.register(engine, { version: () => 2 })
    unregisterFirst()
    assert.equal(system.whereis(engine)?.version(), 2)
    unregisterSecond()
    assert.equal(system.whereis(engine), undefined)
    // Registered names are their own namespace: an actor of the same name is not a handle.
    system.spawn('test-engine', counter)
    assert.equal(system.whereis(engine), undefined)
  })
})
