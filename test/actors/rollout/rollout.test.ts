import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  EnvClient,
  InProcessTransport,
  mulberry32,
  PolicyRouter,
  RolloutDriver,
} from '../../../actors/index.ts'
import { Tokenizer } from '../../../gpu/index.ts'

describe('actors/rollout/rollout - bad environments', () => {
  it('rollout - episodes that cannot start are counted by cause and the loop backs off instead of spinning', async () => {
    // No environment controller serves this transport: every env.start fails at once.
    const transport = new InProcessTransport()
    const driver = new RolloutDriver(
      'r',
      {
        env: new EnvClient(transport, 'nobody', 1_000),
        policy: new PolicyRouter(transport, 'nobody', 0, mulberry32(1)),
        tokenizer: new Tokenizer(),
      },
      {
        tasks: [{ name: 'calc', weight: 1 }],
        groupSize: 2,
        concurrency: 2,
        attempts: 1,
        seed: 1,
        episode: { maxTurns: 1, maxNewTokens: 4, contextLength: 64, temperature: 1, topP: 1 },
      },
      async () => assert.fail('no group can be published'),
      () => 0,
    )
    const started = performance.now()
    const run = driver.runForever()
    // Wait on the event: the third failed group (backoff 100 ms, then 200 ms, before it).
    await new Promise<void>((resolve) => {
      const check = () => ((driver.stats.failed.start_failed ?? 0) >= 6 ? resolve() : setTimeout(check, 10))
      check()
    })
    const elapsed = performance.now() - started
    driver.stop()
    await run
    assert.ok(elapsed >= 300, `three failed groups came after ${elapsed.toFixed(0)} ms: no backoff`)
    assert.equal(driver.stats.episodes, 0)
    assert.equal(driver.metrics()['rollout/failed/start_failed']! >= 6, true)
  })
})
