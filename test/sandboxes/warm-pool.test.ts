import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type RunnerResult,
  SandboxBusyError,
  SandboxLostError,
  WarmPool,
  type WarmSandbox,
} from '../../sandboxes/testing.ts'

interface Fake extends WarmSandbox {
  id: number
}

const ok: RunnerResult = { compile: null, run: null, files: {}, breaches: [], notes: [] }

/** A pool of fake sandboxes that records what it made and destroyed. */
function fakePool(o: { size: number; recycleAfter: number; maxQueue?: number; failCreates?: number }) {
  let next = 0
  let failures = o.failCreates ?? 0
  const made: number[] = []
  const destroyed: number[] = []
  const warnings: string[] = []
  let created: () => void = () => {}
  const pool = new WarmPool<Fake>({
    size: o.size,
    maxQueue: o.maxQueue ?? 10,
    recycleAfter: o.recycleAfter,
    create: async () => {
      if (made.length >= o.size && failures > 0) {
        failures--
        throw new Error('docker is down')
      }
      const s = { id: next++, runs: 0, alive: true }
      made.push(s.id)
      created()
      return s
    },
    destroy: async (s) => {
      destroyed.push(s.id)
    },
    warn: (m) => warnings.push(m),
  })
  const nextCreate = () => new Promise<void>((r) => (created = r))
  return { pool, made, destroyed, warnings, nextCreate }
}

describe('sandboxes/warm-pool', () => {
  it('warm pool - a sandbox is reused until recycleAfter runs, then replaced', async () => {
    const { pool, made, destroyed, nextCreate } = fakePool({ size: 1, recycleAfter: 3 })
    await pool.start()
    const seen: number[] = []
    for (let i = 0; i < 3; i++) {
      const replaced = i === 2 ? nextCreate() : undefined
      await pool.use(async (s) => {
        seen.push(s.id)
        return ok
      })
      await replaced
    }
    await pool.use(async (s) => {
      seen.push(s.id)
      return ok
    })
    assert.deepEqual(seen, [0, 0, 0, 1])
    assert.deepEqual(made, [0, 1])
    assert.deepEqual(destroyed, [0])
    assert.equal(pool.recycled, 1)
    assert.equal(pool.done, 4)
    await pool.close()
    assert.deepEqual(destroyed, [0, 1])
  })

  it('warm pool - a breach, an error or a dead sandbox replaces it at once', async () => {
    const { pool, destroyed, nextCreate } = fakePool({ size: 1, recycleAfter: 100 })
    await pool.start()
    let made = nextCreate()
    await pool.use(async () => ({ ...ok, breaches: ['time_limit'] }))
    await made
    made = nextCreate()
    const r = await pool.use(async () => {
      throw new Error('exec failed')
    })
    assert.deepEqual(r, { error: 'exec failed' })
    await made
    made = nextCreate()
    await pool.use(async (s) => {
      s.alive = false
      return ok
    })
    await made
    assert.deepEqual(destroyed, [0, 1, 2])
    await pool.close()
  })

  it('warm pool - callers past maxQueue get SandboxBusyError; waiting callers are served in order', async () => {
    const { pool } = fakePool({ size: 1, recycleAfter: 100, maxQueue: 2 })
    await pool.start()
    let release: () => void = () => {}
    const first = pool.use(() => new Promise<RunnerResult>((r) => (release = () => r(ok))))
    const order: number[] = []
    const waiting = [1, 2].map((n) =>
      pool.use(async () => {
        order.push(n)
        return ok
      }),
    )
    assert.equal(pool.queued, 2)
    await assert.rejects(
      pool.use(async () => ok),
      (e: unknown) => e instanceof SandboxBusyError && e.queued === 2,
    )
    release()
    await Promise.all([first, ...waiting])
    assert.deepEqual(order, [1, 2])
    await pool.close()
  })

  it('warm pool - a failing replacement is retried with a warning until it works', async () => {
    const { pool, made, warnings, nextCreate } = fakePool({ size: 1, recycleAfter: 1, failCreates: 1 })
    await pool.start()
    const replaced = nextCreate()
    await pool.use(async () => ok)
    await replaced
    assert.deepEqual(made, [0, 1])
    assert.match(warnings[0] ?? '', /cannot make a replacement sandbox: docker is down/)
    await pool.close()
  })

  it('warm pool - a sandbox lost before the job started is replaced and the job runs on another', async () => {
    const { pool, destroyed } = fakePool({ size: 2, recycleAfter: 100 })
    await pool.start()
    const tried: number[] = []
    const r = await pool.use(async (s) => {
      tried.push(s.id)
      if (tried.length === 1) throw new SandboxLostError('container exited')
      return ok
    })
    assert.deepEqual(r, ok)
    assert.equal(tried.length, 2)
    assert.notEqual(tried[0], tried[1])
    assert.equal(destroyed[0], tried[0])
    await pool.close()
  })
})
