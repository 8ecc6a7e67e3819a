import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  type NatsServer,
  type NatsTransport,
  startActorSystem,
  startNatsServer,
  startPolicyEngine,
} from '../../../actors/index.ts'
import { type PolicyEngine, PolicyRouter, TrajectoryBuilder, WeightStore } from '../../../actors/testing.ts'
import { createRng, initWeights, Tokenizer } from '../../../gpu/index.ts'

/**
 * Cross-policy sampling over real NATS with real (tiny) engines: one fresh, one stale
 * (staleEvery 2). Both take version 1 (the first they see); then version 3 is published, which
 * the fresh engine takes and the stale one skips (3 is not a multiple of 2). Fresh replies carry
 * version 3 and stale ones version 1, so every token's recorded version tells its engine.
 */
describe('actors/rollout/policy-router - cross-policy sampling', () => {
  let nats: NatsServer
  let t: NatsTransport
  const system = startActorSystem({ name: 'xpolicy' })
  const engines: PolicyEngine[] = []
  const run = 'xp'
  const tokenizer = new Tokenizer()
  const modelConfig = { layers: 1, width: 16, heads: 2, contextLength: 64, vocabSize: tokenizer.vocabSize }

  before(async () => {
    nats = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'triad-xp-')), monitorPort: false })
    t = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const opts = { run, modelConfig, metricsIntervalMs: 0, loadLatest: false }
    engines.push(await startPolicyEngine(system, t, { ...opts, id: 'fresh0', stale: false }))
    engines.push(await startPolicyEngine(system, t, { ...opts, id: 'stale0', stale: true, staleEvery: 2 }))
    const store = await WeightStore.open(t, run)
    await store.publish(t, 'policy', 1, initWeights(modelConfig, 7))
    await Promise.all(engines.map((e) => e.whenVersion(1)))
    await store.publish(t, 'policy', 3, initWeights(modelConfig, 8))
    await engines[0]!.whenVersion(3)
  })
  after(async () => {
    await Promise.all(engines.map((e) => e.stop()))
    await system.stop()
    await t.close()
    await nats.stop()
  })

  it('router - about rho of the turns go to stale engines, and each token records its engine version', async () => {
    assert.equal(engines[1]!.version(), 1, 'the stale engine skips version 3 (not a multiple of 2)')
    const rho = 0.25
    const router = new PolicyRouter(t, run, rho, createRng(42))
    const turns = 200
    const b = new TrajectoryBuilder()
    let staleReplies = 0
    for (let i = 0; i < turns; i++) {
      const prompt = Int32Array.from([tokenizer.imStartId, 65 + (i % 26)])
      const reply = await router.generate({
        prompt,
        max_new_tokens: 2,
        temperature: 1,
        top_p: 1,
        stop_tokens: [],
        seed: i,
      })
      b.appendGenerated(reply.tokens, reply.logprobs, reply.version)
      if (reply.stale) staleReplies++
      assert.equal(reply.version, reply.stale ? 1 : 3)
      assert.equal(reply.engine, reply.stale ? 'stale0' : 'fresh0')
    }
    // Binomial(200, 0.25): mean 50, sd 6.1; the seeded stream is fixed, the bound is 3 sd.
    assert.ok(Math.abs(staleReplies - rho * turns) <= 19, `stale share ${staleReplies}/${turns}`)
    assert.deepEqual(router.counts, {
      fresh: turns - staleReplies,
      stale: staleReplies,
      staleFallback: 0,
      resent: 0,
    })
    const traj = b.build({ reward: 0, status: 'completed', turns, metrics: {}, stale_turns: staleReplies })
    const staleTokens = [...traj.versions].filter((v) => v === 1).length
    const freshTokens = [...traj.versions].filter((v) => v === 3).length
    assert.equal(staleTokens + freshTokens, traj.tokens.length)
    assert.ok(staleTokens > 0 && freshTokens > 0)
  })

  it('router - with no stale engine serving, stale turns fall back to the fresh engines at once', async () => {
    // A 2 s deadline: the fresh side retries "no responders" until it (the default is 2 minutes).
    const router = new PolicyRouter(t, 'other-run', 1, createRng(1), 2_000)
    await assert.rejects(
      router.generate({
        prompt: Int32Array.from([1]),
        max_new_tokens: 1,
        temperature: 1,
        top_p: 1,
        stop_tokens: [],
      }),
      /no actor serves triad\.other-run\.policy\.fresh/,
    )
    assert.equal(router.counts.staleFallback, 1)
  })
})
