import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ManualClock, RestartTracker, sleep } from '../../../actors/testing.ts'

describe('actors/runtime/supervision', () => {
  const policy = {
    maxRestarts: 3,
    withinMs: 1000,
    backoff: { initialMs: 10, maxMs: 25, factor: 2 },
    onLimit: 'stop',
  } as const

  it('supervision - backoff doubles up to its cap, then the limit applies', () => {
    const t = new RestartTracker(policy)
    assert.deepEqual(t.onCrash(0), { action: 'restart', delayMs: 10, restartsInWindow: 1 })
    assert.deepEqual(t.onCrash(1), { action: 'restart', delayMs: 20, restartsInWindow: 2 })
    assert.deepEqual(t.onCrash(2), { action: 'restart', delayMs: 25, restartsInWindow: 3 })
    assert.deepEqual(t.onCrash(3), { action: 'stop' })
    assert.equal(t.restarts, 3)
  })

  it('supervision - crashes older than the window no longer count', () => {
    const t = new RestartTracker({ ...policy, onLimit: 'escalate' })
    t.onCrash(0)
    t.onCrash(10)
    t.onCrash(20)
    assert.deepEqual(t.onCrash(30), { action: 'escalate' })
    // At 1011 the crashes at 0 and 10 have left the window: 3 remain (20, 30, 1011).
    assert.deepEqual(t.onCrash(1011), { action: 'restart', delayMs: 25, restartsInWindow: 3 })
  })

  it('supervision - an invalid policy is refused', () => {
    assert.throws(() => new RestartTracker({ ...policy, withinMs: 0 }), /invalid supervision policy/)
  })

  it('clock - manual clock fires timers in due order only when advanced', async () => {
    const clock = new ManualClock(100)
    const fired: string[] = []
    clock.setTimeout(() => fired.push('b'), 20)
    clock.setTimeout(() => fired.push('a'), 10)
    const h = clock.setTimeout(() => fired.push('never'), 15)
    clock.clearTimeout(h)
    const slept = sleep(clock, 30).then(() => fired.push('slept'))
    clock.advance(15)
    assert.deepEqual(fired, ['a'])
    clock.advance(15)
    await slept
    assert.deepEqual(fired, ['a', 'b', 'slept'])
    assert.equal(clock.now(), 130)
  })
})
