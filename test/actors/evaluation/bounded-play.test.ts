import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { playBounded } from '../../../actors/index.ts'

/** A promise with its resolve. */
function gate() {
  let open!: () => void
  const promise = new Promise<void>((res) => {
    open = res
  })
  return { promise, open }
}

describe('actors/evaluation/bounded-play', () => {
  it('playBounded - at most `concurrency` calls run at once, started in job order; results in job order', async () => {
    const gates = Array.from({ length: 5 }, gate)
    const started: number[] = []
    let running = 0
    let most = 0
    const all = playBounded([10, 20, 30, 40, 50], 2, async (job, i) => {
      started.push(i)
      most = Math.max(most, ++running)
      await gates[i]!.promise
      running--
      return job + i
    })
    await Promise.resolve()
    assert.deepEqual(started, [0, 1])
    gates[1]!.open()
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(started, [0, 1, 2])
    for (const g of gates) g.open()
    assert.deepEqual(await all, [10, 21, 32, 43, 54])
    assert.equal(most, 2)
  })

  it('playBounded - after a failure no job starts; it rejects with the first error once the running calls settled', async () => {
    const slow = gate()
    const started: number[] = []
    let settled = false
    const all = playBounded([0, 1, 2, 3], 2, async (_job, i) => {
      started.push(i)
      if (i === 0) {
        await slow.promise
        settled = true
        return i
      }
      throw new Error(`job ${i} failed`)
    })
    let rejected = false
    all.catch(() => {
      rejected = true
    })
    await new Promise((r) => setImmediate(r))
    assert.equal(rejected, false, 'waits for the running job')
    slow.open()
    await assert.rejects(all, /job 1 failed/)
    assert.equal(settled, true)
    assert.deepEqual(started, [0, 1])
  })

  it('playBounded - a concurrency below 1 is a RangeError; no jobs give []', async () => {
    await assert.rejects(
      playBounded([1], 0, async (x) => x),
      RangeError,
    )
    assert.deepEqual(await playBounded([], 3, async (x) => x), [])
  })
})
