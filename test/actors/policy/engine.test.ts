import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import {
  connectNats,
  type NatsServer,
  type NatsTransport,
  policyReplies,
  remoteActor,
  startActorSystem,
  startNatsServer,
  startPolicyEngine,
} from '../../../actors/index.ts'
import {
  acceptsVersion,
  ManualClock,
  type WeightMap,
  WeightStore,
  type WeightsAnnouncement,
} from '../../../actors/testing.ts'
import {
  ConfigError,
  createRng,
  createTransformer,
  disposeTransformer,
  fullConfig,
  fullLoraConfig,
  generate,
  initAdapters,
  initWeights,
  type LoraTarget,
  type TransformerConfig,
  withAdapters,
} from '../../../gpu/index.ts'
import {
  type Envelope,
  ErrorCode,
  MessageRegistry,
  MetricsReport,
  type PayloadOf,
  PolicyGenerate,
  type PolicyGenerated,
  RemoteError,
  Subjects,
} from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { within } from '../../support/within.ts'

const config: TransformerConfig = { layers: 1, width: 16, heads: 2, contextLength: 48, vocabSize: 13 }
const RUN = 'eng'

/** Weights with a wide spread (a distribution far from uniform), different per seed. */
function spread(seed: number): WeightMap {
  const w = initWeights(config, seed)
  const rng = createRng(seed + 100)
  for (const [name, data] of Object.entries(w))
    if (!name.endsWith('norm')) for (let i = 0; i < data.length; i++) data[i] = 0.4 * rng.normal()
  return w
}

/** Greedy tokens of `weights` on `prompt`, computed alone with `generate`. */
async function greedy(weights: WeightMap, prompt: number[], maxNewTokens: number): Promise<number[]> {
  const model = createTransformer(config, { weights })
  const [g] = await generate(model, [prompt], { maxNewTokens, temperature: 0 })
  disposeTransformer(model)
  return Array.from(g!.tokens)
}

/** A promise with its resolver. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((r) => {
    open = r
  })
  return { promise, open }
}

type Generated = PayloadOf<typeof PolicyGenerated>

describe('actors/policy/engine - policy engines over NATS', () => {
  let nats: NatsServer
  let server: NatsTransport
  let client: NatsTransport
  let store: WeightStore
  let dir: string
  const system = startActorSystem({ name: 'engine-test' })
  const ask = (
    subject: string,
    prompt: number[],
    max: number,
    extra: Partial<PayloadOf<typeof PolicyGenerate>> = {},
  ) =>
    remoteActor(client, subject, { replies: policyReplies })
      .ask(
        PolicyGenerate.make({
          prompt: Int32Array.from(prompt),
          max_new_tokens: max,
          temperature: 0,
          ...extra,
        }),
        20_000,
      )
      .then((m) => m.payload as Generated)

  before(async () => {
    await useTestBackend()
    dir = mkdtempSync(path.join(tmpdir(), 'triad-engine-'))
    nats = await startNatsServer({ storeDir: dir, monitorPort: false })
    server = await connectNats({ servers: nats.url, run: RUN, role: 'policy', id: '0' })
    client = await connectNats({ servers: nats.url, run: RUN, role: 'test', id: '0' })
    store = await WeightStore.open(client, RUN, { keep: 10 })
  })
  after(async () => {
    await system.stop()
    await client.close()
    await server.close()
    await nats.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('version-policy - fresh engines take every newer version, stale ones multiples of k or the first', () => {
    const fresh = { stale: false, staleEvery: 3, current: 4, announced: true }
    assert.equal(acceptsVersion(fresh, 5), true)
    assert.equal(acceptsVersion(fresh, 4), false)
    const stale = { ...fresh, stale: true }
    assert.equal(acceptsVersion(stale, 5), false)
    assert.equal(acceptsVersion(stale, 6), true)
    assert.equal(acceptsVersion(stale, 3), false)
    assert.equal(acceptsVersion({ ...stale, current: 0, announced: false }, 1), true)
    assert.equal(acceptsVersion({ ...stale, current: 0, announced: false }, 0), true)
  })

  it('policy engine - serves policy.generate over NATS with shared passes; stats and metrics report it', async () => {
    const weights = spread(1)
    const metrics: Envelope[] = []
    const heard = latch()
    client.subscribe(Subjects.metrics(RUN, 'policy'), {
      accepts: new MessageRegistry([MetricsReport]),
      handler: (m) => {
        metrics.push(m)
        if ((m.payload as { values: Record<string, number> }).values['engine/tokens_per_s']! > 0) heard.open()
      },
    })
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'a',
      modelConfig: config,
      weights,
      metricsIntervalMs: 100,
    })
    await server.flush()
    const prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9], [10], [2, 2]]
    const replies = await Promise.all(prompts.map((p) => ask(Subjects.policyFresh(RUN), p, 10)))
    for (let i = 0; i < prompts.length; i++) {
      const r = replies[i]!
      assert.deepEqual(Array.from(r.tokens), await greedy(weights, prompts[i]!, 10))
      assert.equal(r.logprobs.length, 10)
      assert.equal(r.version, 0)
      assert.equal(r.engine, 'a')
      assert.equal(r.stale, false)
      assert.equal(r.finish_reason, 'length')
    }
    const s = engine.stats()
    assert.equal(s.tokens, 40)
    assert.ok(s.batchRows / s.decodeSteps > 1, 'requests shared forward passes')

    // Bad input is a typed reply and the engine keeps serving.
    await assert.rejects(
      ask(Subjects.policyFresh(RUN), [1, 99], 3),
      (e: unknown) => e instanceof RemoteError && e.code === ErrorCode.InvalidMessage,
    )
    await assert.rejects(
      ask(
        Subjects.policyFresh(RUN),
        Array.from({ length: 48 }, () => 1),
        3,
      ),
      (e: unknown) => e instanceof RemoteError && e.code === ErrorCode.InvalidMessage,
    )
    assert.equal((await ask(Subjects.policyFresh(RUN), [3], 2)).tokens.length, 2)
    assert.equal(engine.ref.stats().restarts, 0)

    const svc = new Svcm(client.nc as never).client({ strategy: 'timer', maxWait: 500 })
    const all = []
    for await (const x of await svc.stats('triad-policy')) all.push(x)
    assert.equal(all.length, 1)
    const data = all[0]!.endpoints![0]!.data as Record<string, number>
    assert.equal(data.tokens_generated, 42)
    assert.equal(data.version, 0)
    assert.equal(data.handled, 7)

    await within(heard.promise, 5_000, 'a metrics.report with tokens')
    const values = (metrics.at(-1)!.payload as { values: Record<string, number> }).values
    assert.deepEqual(Object.keys(values).sort(), [
      'engine/batch_size_mean',
      'engine/busy_frac',
      'engine/tokens_per_s',
      'engine/version',
    ])
    await engine.stop()
  })

  it('policy engine - stop publishes a last metrics report, so a phase shorter than the interval is recorded; not one under 1 s after the previous', async () => {
    const reports: { id: string; values: Record<string, number> }[] = []
    const markers: (() => void)[] = []
    client.subscribe(Subjects.metrics(RUN, 'policy-stale'), {
      accepts: new MessageRegistry([MetricsReport]),
      handler: (m) => {
        const p = m.payload as { id: string; values: Record<string, number> }
        if (p.id === 'marker') markers.shift()?.()
        else if (p.id.startsWith('last-')) reports.push(p)
      },
    })
    await client.flush()
    /** Resolves once every report `server` published before it has arrived (one publisher keeps its order). */
    const delivered = () => {
      const arrived = new Promise<void>((resolve) => markers.push(resolve))
      server.publish(
        Subjects.metrics(RUN, 'policy-stale'),
        MetricsReport.make({ role: 'policy-stale', id: 'marker', step: 0, time: 0, values: {} }),
      )
      return within(arrived, 5_000, 'the marker report')
    }
    const start = async (id: string, clock: ManualClock) =>
      startPolicyEngine(system, server, {
        run: RUN,
        id,
        modelConfig: config,
        weights: spread(1),
        stale: true,
        metricsIntervalMs: 5_000,
        clock,
      })

    // Stopped 2.5 s in, before its first report: one report over those 2.5 s.
    const shortClock = new ManualClock(0)
    const short = await start('last-short', shortClock)
    await ask(Subjects.policyStale(RUN), [1, 2, 3], 6)
    const tokens = short.stats().tokens
    assert.ok(tokens >= 6)
    shortClock.advance(2_500)
    await short.stop()
    await delivered()
    assert.deepEqual(
      reports.map((r) => [r.id, r.values['engine/tokens_per_s']]),
      [['last-short', tokens / 2.5]],
    )

    // Stopped 0.5 s after its first report: no second one.
    reports.length = 0
    const longClock = new ManualClock(0)
    const long = await start('last-long', longClock)
    await ask(Subjects.policyStale(RUN), [1, 2, 3], 6)
    const longTokens = long.stats().tokens
    longClock.advance(5_500)
    await long.stop()
    await delivered()
    assert.deepEqual(
      reports.map((r) => [r.id, r.values['engine/tokens_per_s']]),
      [['last-long', longTokens / 5]],
    )
  })

  it('policy engine - a weight update mid-generation: the request in flight keeps its version, later ones get the new', async () => {
    const v0 = spread(2)
    const v1 = spread(3)
    const reached = latch()
    const release = latch()
    let iteration = 0
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'b',
      modelConfig: config,
      weights: v0,
      metricsIntervalMs: 0,
      stepGate: async () => {
        if (++iteration === 3) {
          reached.open()
          await release.promise
        }
      },
    })
    await server.flush()
    const early = ask(Subjects.policyFresh(RUN), [1, 2, 3, 4], 12)
    await within(reached.promise, 10_000, 'the generation to be under way')
    assert.ok(engine.stats().active === 1 && engine.stats().tokens >= 2, 'in flight')
    await store.publish(client, 'policy', 1, v1)
    await within(engine.whenVersion(1), 10_000, 'version 1')
    const late = ask(Subjects.policyFresh(RUN), [5, 6], 6)
    release.open()
    const [e, l] = await Promise.all([early, late])
    assert.equal(e.version, 0)
    assert.deepEqual(Array.from(e.tokens), await greedy(v0, [1, 2, 3, 4], 12))
    assert.equal(l.version, 1)
    assert.deepEqual(Array.from(l.tokens), await greedy(v1, [5, 6], 6))
    assert.deepEqual(engine.stats().loaded, [0, 1])
    await engine.stop()
  })

  it('policy engine - keeps serving while weights load', async () => {
    const loading = latch()
    const finish = latch()
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'c',
      modelConfig: config,
      weights: spread(4),
      metricsIntervalMs: 0,
      loadLatest: false,
      weightSource: {
        load: async (a: WeightsAnnouncement) => {
          loading.open()
          await finish.promise
          return store.load(a)
        },
      },
    })
    await server.flush()
    await store.publish(client, 'policy', 2, spread(5))
    await within(loading.promise, 10_000, 'the load to start')
    const during = await within(ask(Subjects.policyFresh(RUN), [7, 8], 4), 10_000, 'a reply during the load')
    assert.equal(during.version, 0)
    finish.open()
    await within(engine.whenVersion(2), 10_000, 'version 2')
    assert.equal((await ask(Subjects.policyFresh(RUN), [7, 8], 4)).version, 2)
    await engine.stop()
  })

  it('policy engine - LoRA: versions carry the adapters alone and run on the shared frozen base', async () => {
    const lora = { rank: 2, alpha: 4, targets: ['q_proj', 'v_proj'] as LoraTarget[] }
    const base = createTransformer(config, { weights: spread(6) })
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'lora',
      model: 'lora-policy',
      modelConfig: config,
      lora: { base, config: lora },
      metricsIntervalMs: 0,
      loadLatest: false,
    })
    await server.flush()
    // version 0: fresh adapters (B = 0), the base model's own tokens
    const v0 = await ask(Subjects.policyFresh(RUN), [1, 2, 3], 8)
    assert.deepEqual(Array.from(v0.tokens), await greedy(spread(6), [1, 2, 3], 8))
    const adapters = initAdapters(fullConfig(config), fullLoraConfig(lora), 1)
    for (const [name, a] of Object.entries(adapters))
      if (name.endsWith('lora_b')) for (let i = 0; i < a.length; i++) a[i] = Math.sin(3 * i + name.length)
    const announced = await store.publish(client, 'lora-policy', 1, adapters)
    const full = await store.put('full-size', 1, spread(6))
    assert.ok(
      announced.bytes * 4 < full.bytes,
      `adapters ${announced.bytes} bytes, whole model ${full.bytes}`,
    )
    await within(engine.whenVersion(1), 10_000, 'adapter version 1')
    const v1 = await ask(Subjects.policyFresh(RUN), [1, 2, 3], 8)
    const adapted = withAdapters(base, adapters, lora)
    const [expected] = await generate(adapted, [[1, 2, 3]], { maxNewTokens: 8, temperature: 0 })
    disposeTransformer(adapted)
    assert.equal(v1.version, 1)
    assert.deepEqual(Array.from(v1.tokens), Array.from(expected!.tokens))
    assert.notDeepEqual(Array.from(v1.tokens), Array.from(v0.tokens))
    await engine.stop()
    // the engine never freed the base
    assert.ok(!base.params.get('embed')!.isDisposed)
    disposeTransformer(base)
  })

  it('policy engine - a stale engine takes only versions divisible by staleEvery (or the first it sees)', async () => {
    const stale = await startPolicyEngine(system, server, {
      run: RUN,
      id: 's',
      stale: true,
      staleEvery: 2,
      modelConfig: config,
      weights: spread(6),
      metricsIntervalMs: 0,
      loadLatest: false,
    })
    await server.flush()
    await store.publish(client, 'policy', 11, spread(11))
    await within(stale.whenVersion(11), 10_000, 'the first version seen')
    for (const v of [13, 14, 15]) await store.publish(client, 'policy', v, spread(v))
    await within(stale.whenVersion(14), 10_000, 'version 14')
    // 15 was announced after 14; a round trip through the engine's mailbox shows it was handled.
    const r = await ask(Subjects.policyStale(RUN), [1, 2], 3)
    assert.equal(r.version, 14)
    assert.equal(r.stale, true)
    assert.equal(r.engine, 's')
    await store.publish(client, 'policy', 16, spread(16))
    await within(stale.whenVersion(16), 10_000, 'version 16')
    assert.deepEqual(stale.stats().loaded, [0, 11, 14, 16])
    assert.equal(stale.stats().skipped, 2)
    await stale.stop()
  })

  it('policy engine - requests without a seed get different samples; stop lets running requests finish', async () => {
    const reached = latch()
    const release = latch()
    let iteration = 0
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'e',
      modelConfig: config,
      weights: spread(7),
      metricsIntervalMs: 0,
      loadLatest: false,
      stepGate: async () => {
        if (++iteration === 2) {
          reached.open()
          await release.promise
        }
      },
    })
    await server.flush()
    const pending = [1, 2].map(() => ask(Subjects.policyFresh(RUN), [4, 4, 4], 10, { temperature: 1 }))
    await within(reached.promise, 10_000, 'the generations to be under way')
    const stopping = engine.stop()
    release.open()
    const [a, b] = await within(Promise.all(pending), 10_000, 'the running requests')
    await stopping
    assert.equal(a.tokens.length, 10)
    assert.notDeepEqual(Array.from(a.tokens), Array.from(b.tokens))
  })

  it('policy engine - a fresh engine starts on the newest stored version; bad options are typed errors', async () => {
    await store.publish(client, 'policy', 20, spread(20))
    const engine = await startPolicyEngine(system, server, {
      run: RUN,
      id: 'd',
      modelConfig: config,
      metricsIntervalMs: 0,
    })
    await within(engine.whenVersion(20), 10_000, 'the stored version')
    const r = await ask(Subjects.policyFresh(RUN), [3, 4, 5], 5)
    assert.equal(r.version, 20)
    assert.deepEqual(Array.from(r.tokens), await greedy(spread(20), [3, 4, 5], 5))
    await engine.stop()
    // Stale engines start on the newest stored multiple of staleEvery, else on the newest.
    for (const [k, expected] of [
      [7, 14],
      [9, 20],
    ] as const) {
      const stale = await startPolicyEngine(system, server, {
        run: RUN,
        id: `d-stale-${k}`,
        stale: true,
        staleEvery: k,
        modelConfig: config,
        metricsIntervalMs: 0,
      })
      await within(stale.whenVersion(expected), 10_000, `stored version ${expected}`)
      assert.equal((await ask(Subjects.policyStale(RUN), [3, 4, 5], 2)).version, expected)
      await stale.stop()
    }
    await assert.rejects(
      startPolicyEngine(system, server, {
        run: RUN,
        id: 'x',
        stale: true,
        staleEvery: 0,
        modelConfig: config,
      }),
      ConfigError,
    )
  })
})
