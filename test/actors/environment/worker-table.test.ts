import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { WorkerTable } from '../../../actors/environment/index.ts'

const beat = (
  worker: string,
  o: { capacity?: number; active?: number; draining?: boolean; tasks?: string[] } = {},
) => ({
  worker,
  subject: `s.${worker}`,
  capacity: o.capacity ?? 4,
  active: o.active ?? 0,
  tasks: o.tasks ?? ['calc'],
  draining: o.draining ?? false,
  sessions: [],
  interval_ms: 100,
  counts: { started: 0, ended: 0, expired: 0, cancelled: 0, errors: 0, interactions: 0 },
})

describe('actors/environment/worker-table', () => {
  it('worker-table - the worker with the most free places is chosen; the estimate grows with each start', () => {
    const t = new WorkerTable()
    assert.equal(t.heartbeat(beat('a', { active: 1 }), 0), 'registered')
    t.heartbeat(beat('b', { active: 2 }), 0)
    const first = t.choose('calc', 10)!
    assert.equal(first.beat.worker, 'a')
    first.active += 2
    assert.equal(t.choose('calc', 10)!.beat.worker, 'b')
    assert.equal(t.choose('maze', 10), undefined)
    assert.equal(t.choose('calc', 10, new Set(['a', 'b'])), undefined)
  })

  it('worker-table - a heartbeat sent before the worker took a pending start does not lose that start', () => {
    const t = new WorkerTable()
    t.heartbeat(beat('a'), 0)
    t.heartbeat(beat('b'), 0)
    // Two starts go out to a (both unanswered), then a heartbeat of a that left before either.
    const a = t.choose('calc', 10)!
    assert.equal(a.beat.worker, 'a')
    a.active += 1
    a.pending += 1
    t.heartbeat(beat('a', { active: 0 }), 20)
    assert.equal(t.get('a')!.active, 1, 'the pending start still counts')
    assert.equal(t.get('a'), a, 'updated in place: the start in flight settles on the same entry')
    assert.equal(t.choose('calc', 30)!.beat.worker, 'b', 'b has more free places')
    // Answered: no longer pending; the next heartbeat reports it.
    a.pending -= 1
    t.heartbeat(beat('a', { active: 1 }), 40)
    assert.equal(t.get('a')!.active, 1)
  })

  it('worker-table - silent after three missed intervals, revived by a heartbeat', () => {
    const t = new WorkerTable(3)
    t.heartbeat(beat('a'), 0)
    assert.deepEqual(t.newlySilent(300), [])
    assert.deepEqual(
      t.newlySilent(301).map((e) => e.beat.worker),
      ['a'],
    )
    assert.deepEqual(t.newlySilent(400), [])
    assert.equal(t.choose('calc', 301), undefined)
    assert.equal(t.list(301)[0]!.state, 'silent')
    assert.equal(t.heartbeat(beat('a'), 500), 'revived')
    assert.equal(t.choose('calc', 500)!.beat.worker, 'a')
  })

  it('worker-table - a stalled controller does not count its deaf time against the workers', () => {
    const t = new WorkerTable(3, 100)
    t.heartbeat(beat('a'), 0)
    t.checked(50, 0)
    // The controller's process stalled from 50 to 10,000: asked before its next check, it judges
    // silence as of its last check (plus the slack), not as of now.
    assert.equal(t.choose('calc', 10_000)?.beat.worker, 'a')
    assert.deepEqual(t.newlySilent(10_000), [])
    // Its first check after the stall, 9,900 ms late, credits that time to every worker.
    t.checked(10_000, 9_900)
    assert.deepEqual(t.newlySilent(10_000), [])
    assert.equal(t.list(10_000)[0]!.state, 'live')
    // Awake again and on time: three missed intervals make the worker silent, as always.
    t.checked(10_250, 0)
    assert.deepEqual(
      t.newlySilent(10_250).map((e) => e.beat.worker),
      ['a'],
    )
  })

  it('worker-table - draining workers take no new sessions and show as draining', () => {
    const t = new WorkerTable()
    t.heartbeat(beat('a', { draining: true }), 0)
    assert.equal(t.choose('calc', 0), undefined)
    assert.equal(t.list(0)[0]!.state, 'draining')
  })
})
