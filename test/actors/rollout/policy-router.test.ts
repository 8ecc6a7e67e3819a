import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InProcessTransport, type Served } from '../../../actors/index.ts'
import { PolicyRouter, RequestTimeoutError } from '../../../actors/testing.ts'
import { createRng } from '../../../gpu/index.ts'
import {
  type Envelope,
  MessageRegistry,
  PolicyGenerate,
  PolicyGenerated,
  Subjects,
} from '../../../protocols/index.ts'

const run = 'router'
const request = {
  prompt: new Int32Array([1, 2]),
  max_new_tokens: 2,
  temperature: 1,
  top_p: 1,
  stop_tokens: [],
}

/**
 * A fresh engine on the in-process transport that answers after `delayMs`, except the requests whose
 * 1-based number `drop` says: those it takes and never answers, as an engine whose host was cut off.
 */
async function engine(
  t: InProcessTransport,
  drop: (n: number) => boolean,
  delayMs = 20,
): Promise<{ served: Served; received: () => number }> {
  let n = 0
  const served = await t.serve(Subjects.policyFresh(run), {
    accepts: new MessageRegistry([PolicyGenerate]),
    queue: 'policy-fresh',
    handler: async (_m: Envelope) => {
      n++
      if (drop(n)) return new Promise<Envelope>(() => {})
      await new Promise((r) => setTimeout(r, delayMs))
      return PolicyGenerated.make({
        tokens: new Int32Array([n]),
        logprobs: new Float32Array([-1]),
        version: 3,
        finish_reason: 'length',
        engine: 'e0',
        stale: false,
      })
    },
  })
  return { served, received: () => n }
}

describe('actors/rollout/policy-router - a generate request that gets no reply', () => {
  it('router - a lost request is sent again after 4 times the slowest reply (at least the floor)', async () => {
    const t = new InProcessTransport()
    const e = await engine(t, (n) => n === 2)
    const router = new PolicyRouter(t, run, 0, createRng(1), 30_000, 200)
    assert.deepEqual([...(await router.generate(request)).tokens], [1])
    const start = Date.now()
    const turn = await router.generate(request)
    const waited = Date.now() - start
    assert.deepEqual([...turn.tokens], [3], 'the reply of the third request, the one sent again')
    assert.equal(router.counts.resent, 1)
    assert.equal(router.counts.fresh, 2)
    assert.equal(e.received(), 3)
    assert.ok(waited >= 200 && waited < 5_000, `waited ${waited} ms`)
    await e.served.stop()
  })

  it('router - before the first reply, one attempt waits the whole timeout; then RequestTimeoutError', async () => {
    const t = new InProcessTransport()
    const e = await engine(t, () => true)
    const router = new PolicyRouter(t, run, 0, createRng(1), 300, 50)
    await assert.rejects(router.generate(request), (err: Error) => {
      assert.ok(err instanceof RequestTimeoutError, String(err))
      assert.equal(err.timeoutMs, 300)
      return true
    })
    assert.equal(router.counts.resent, 0)
    assert.equal(e.received(), 1)
    await e.served.stop()
  })

  it('router - attempts stop at the timeout in all, which the error names', async () => {
    const t = new InProcessTransport()
    const e = await engine(t, (n) => n > 1, 10)
    const router = new PolicyRouter(t, run, 0, createRng(1), 1_000, 200)
    await router.generate(request)
    const start = Date.now()
    await assert.rejects(router.generate(request), (err: Error) => {
      assert.ok(err instanceof RequestTimeoutError, String(err))
      assert.equal(err.timeoutMs, 1_000)
      assert.match(err.message, /within 1000 ms/)
      return true
    })
    const waited = Date.now() - start
    assert.ok(waited >= 950 && waited < 3_000, `waited ${waited} ms`)
    // Attempts of 200 ms within 1,000 ms: 5 sent, 4 of them again.
    assert.equal(router.counts.resent, 4)
    assert.equal(e.received(), 6)
    await e.served.stop()
  })
})
