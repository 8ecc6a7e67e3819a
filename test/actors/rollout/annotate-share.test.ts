import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  InProcessTransport,
  startActorSystem,
  startEnvController,
  startEnvWorker,
  startPolicyEngine,
  tasks,
} from '../../../actors/index.ts'
import {
  EnvClient,
  type PolicyEngine,
  PolicyRouter,
  RolloutDriver,
  type RolloutSettings,
  WeightStore,
} from '../../../actors/testing.ts'
import { createRng, initWeights, Tokenizer } from '../../../gpu/index.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'

/**
 * `annotateShare`: which groups go through the annotator (step judging). Real environment
 * controller and worker (calc), a real tiny policy engine, in one process on the in-process
 * transport; the annotator is a counter standing in for the reward model.
 */
describe('actors/rollout/rollout - annotateShare', () => {
  const run = 'annotate'
  const transport = new InProcessTransport()
  const system = startActorSystem({ name: 'annotate' })
  const tokenizer = new Tokenizer()
  const modelConfig = { layers: 1, width: 16, heads: 2, contextLength: 256, vocabSize: tokenizer.vocabSize }
  const stops: (() => Promise<void>)[] = []
  let engine: PolicyEngine

  before(async () => {
    const controller = await startEnvController(system, transport, { run, tasks })
    const worker = await startEnvWorker(system, transport, { run, id: 'w', tasks, capacity: 16, seed: 1 })
    engine = await startPolicyEngine(system, transport, {
      run,
      id: 'fresh0',
      stale: false,
      modelConfig,
      metricsIntervalMs: 0,
      loadLatest: false,
    })
    const store = await WeightStore.open(transport, run)
    await store.publish(transport, 'policy', 0, initWeights(modelConfig, 3))
    await engine.whenVersion(0)
    stops.push(
      () => engine.stop(),
      () => worker.stop(),
      () => controller.stop(),
    )
  })
  after(async () => {
    for (const s of stops) await s()
    await system.stop()
  })

  /** Runs `groups` groups of 2 one-turn calc episodes with an annotator that marks each episode. */
  const runGroups = async (annotateShare: number | undefined, groups: number) => {
    let calls = 0
    const settings: RolloutSettings = {
      tasks: [{ name: 'calc', weight: 1, difficulty: 1 }],
      groupSize: 2,
      concurrency: 2,
      attempts: 1,
      seed: 5,
      episode: { maxTurns: 1, maxNewTokens: 4, contextLength: 256, temperature: 1, top_p: 1 },
      ...(annotateShare === undefined ? {} : { annotateShare }),
    }
    const published: TrajectoryGroupPayload[] = []
    const driver = new RolloutDriver(
      'r',
      {
        env: new EnvClient(transport, run),
        policy: new PolicyRouter(transport, run, 0, createRng(1)),
        tokenizer,
        annotate: async () => {
          calls++
          return { judge_version: 7 }
        },
      },
      settings,
      async (g) => {
        published.push(g)
      },
      () => 0,
    )
    await driver.runBatch(groups)
    return { calls, published, driver }
  }

  it('rollout - share 0.5: the groups of the seeded draw are annotated, every episode of them and none of the others', async () => {
    const groups = 8
    const { calls, published, driver } = await runGroups(0.5, groups)
    assert.equal(published.length, groups)
    const draws = createRng(5 ^ 0x5bd1e995)
    const expected = Array.from({ length: groups }, () => draws.next() < 0.5).filter(Boolean).length
    assert.ok(expected > 0 && expected < groups, 'the seed draws some groups and not others')
    assert.equal(driver.stats.annotatedGroups, expected)
    assert.equal(driver.metrics()['rollout/annotated_groups'], expected)
    assert.equal(calls, expected * 2)
    for (const g of published) {
      const marked = g.samples.map((s) => s.judge_version === 7)
      assert.ok(
        marked.every((m) => m === marked[0]),
        `group ${g.group_id}: all or none annotated`,
      )
    }
    assert.equal(published.filter((g) => g.samples[0]!.judge_version === 7).length, expected)
  })

  it('rollout - share 1 (the default) annotates every episode, share 0 none', async () => {
    assert.equal((await runGroups(undefined, 3)).calls, 6)
    assert.equal((await runGroups(0, 3)).calls, 0)
  })

  it('rollout - a share outside [0, 1] is refused when the driver is made', async () => {
    await assert.rejects(runGroups(1.5, 1), /annotateShare must be in \[0, 1\], got 1.5/)
  })
})
