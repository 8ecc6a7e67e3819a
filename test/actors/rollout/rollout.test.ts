import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InProcessTransport } from '../../../actors/index.ts'
import { EnvClient, type GroupSink, PolicyRouter, RolloutDriver } from '../../../actors/testing.ts'
import { createRng, Tokenizer } from '../../../gpu/index.ts'
import {
  EnvStart,
  EnvStarted,
  MessageRegistry,
  type Millis,
  PolicyGenerate,
  Subjects,
} from '../../../protocols/index.ts'

/**
 * A rollout driver of run `run` on `transport`: one-turn calc episodes (at most 4 new tokens,
 * context 64) in groups of 2, seeded with 1, with `concurrency` agent loops and `attempts` per
 * episode; env requests time out after `envTimeoutMs` (the client's default when not given), and
 * every finished group goes to `sink`.
 */
function calcDriver(
  transport: InProcessTransport,
  run: string,
  loops: { concurrency: number; attempts: number; envTimeoutMs?: Millis },
  sink: GroupSink,
): RolloutDriver {
  return new RolloutDriver(
    'r',
    {
      env: new EnvClient(transport, run, loops.envTimeoutMs),
      policy: new PolicyRouter(transport, run, 0, createRng(1)),
      tokenizer: new Tokenizer(),
    },
    {
      tasks: [{ name: 'calc', weight: 1 }],
      groupSize: 2,
      concurrency: loops.concurrency,
      attempts: loops.attempts,
      seed: 1,
      episode: { maxTurns: 1, maxNewTokens: 4, contextLength: 64, temperature: 1, top_p: 1 },
    },
    sink,
    () => 0,
  )
}

describe('actors/rollout/rollout - bad environments', () => {
  it('rollout - episodes that cannot start are counted by cause and the loop backs off instead of spinning', async () => {
    // No environment controller serves this transport: every env.start fails at once.
    const transport = new InProcessTransport()
    const driver = calcDriver(
      transport,
      'nobody',
      { concurrency: 2, attempts: 1, envTimeoutMs: 1_000 },
      async () => assert.fail('no group can be published'),
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

describe('actors/rollout/rollout - stop', () => {
  it('rollout - stop gives up the episodes in flight: the loops end at once, nothing is counted failed or handed on', {
    timeout: 10_000,
  }, async () => {
    const transport = new InProcessTransport()
    const run = 'stop'
    // Sessions start; the policy takes every generate request and never answers (an engine that
    // is stopping under the loops). Without the stop signal each loop would wait 2 minutes.
    await transport.serve(Subjects.envStart(run), {
      accepts: new MessageRegistry([EnvStart]),
      handler: () =>
        EnvStarted.make({
          session: 's',
          worker: `triad.${run}.env.worker.w`,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [],
        }),
    })
    let asked = 0
    let allAsked!: () => void
    const generating = new Promise<void>((resolve) => {
      allAsked = resolve
    })
    await transport.serve(Subjects.policyFresh(run), {
      accepts: new MessageRegistry([PolicyGenerate]),
      handler: () => {
        if (++asked === 4) allAsked()
        return new Promise(() => {})
      },
    })
    const driver = calcDriver(transport, run, { concurrency: 4, attempts: 3 }, async () =>
      assert.fail('a group cut short is not handed on'),
    )
    const loops = driver.runForever()
    await generating
    driver.stop()
    await loops
    assert.deepEqual(
      {
        episodes: driver.stats.episodes,
        groups: driver.stats.groups,
        failed: driver.stats.failed,
        retried: driver.stats.retried,
      },
      { episodes: 0, groups: 0, failed: {}, retried: 0 },
    )
    assert.equal(asked, 4)
  })
})
