import { chooseBackend, createRng } from '../../gpu/index.ts'
import {
  EnvDifficulty,
  MessageRegistry,
  type PayloadOf,
  RewardLoadWeights,
  Subjects,
  TrajectoryGroup,
  WeightsPublished,
} from '../../protocols/index.ts'
import { DifficultyView, startEnvAdapter } from '../env-adapter/index.ts'
import { type EnvWorker, startEnvController, startEnvWorker, tasks } from '../environment/index.ts'
import { PublisherClosedError } from '../pipeline/errors.ts'
import { openTrajectoryPublisher } from '../pipeline/open-trajectory-stream.ts'
import { NODE_ENGINE_DRAIN_MS, type PolicyEngine, startPolicyEngine } from '../policy/index.ts'
import { rewardReplies, StepJudge, startRewardModel, switchMetrics } from '../reward/index.ts'
import { EnvClient } from '../rollout/env-client.ts'
import { PolicyRouter } from '../rollout/policy-router.ts'
import { RolloutDriver } from '../rollout/rollout.ts'
import { unlessAborted } from '../runtime/abort.ts'
import type { ActorSystem } from '../runtime/actor-system.ts'
import { remoteActor } from '../runtime/bridge.ts'
import { runSeeds } from '../runtime/index.ts'
import type { Transport } from '../runtime/transport.ts'
import { WeightStore } from '../weights/index.ts'
import { type NodeConfig, rolloutSettingsOf } from './config.ts'
import { StartAbortedError } from './errors.ts'
import { type NodeHandle, type NodeOptions, reportMetrics } from './learner-node.ts'
import { fetchRunTokenizer } from './run-tokenizer.ts'
import { stepJudgeAnnotator } from './step-judging.ts'

/** How often the rollout side publishes its metrics, ms. */
const METRICS_INTERVAL_MS = 2_000

/**
 * The rollout node: fresh and stale policy engines, and the rollout driver (one agent loop per
 * trajectory, grouped G per task instance). Environments are reached through the controller
 * (`env.start`), wherever their workers run. Finished groups go to the trajectory stream.
 *
 * Asynchronous mode: the loops never wait for the learner (the stream's bound is the only
 * brake). Synchronous mode (the baseline): generate `minBatchGroups` groups, then wait for the next
 * weight version before the next batch.
 * @throws StartAbortedError when `options.signal` aborts while it waits for the learner's tokenizer
 *   or first weights (actors it started by then are stopped with the actor system).
 */
export async function startRolloutNode(
  system: ActorSystem,
  transport: Transport,
  config: NodeConfig,
  id: string,
  options: NodeOptions = {},
): Promise<NodeHandle> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[rollout] ${line}\n`))
  await chooseBackend({ backend: config.backend, log })
  const tokenizer = await unlessAborted(
    fetchRunTokenizer(transport, config.run),
    options.signal,
    () => new StartAbortedError('rollout', "the learner's tokenizer"),
  )
  const modelConfig = { ...config.model, vocabSize: tokenizer.vocabSize }
  const p = config.pipeline
  // Environments: a controller and env workers in this process (more workers may join from
  // other machines with `triad worker --role env`; the controller routes to all of them).
  const controller = await startEnvController(system, transport, { run: config.run, tasks })
  const envWorkers: EnvWorker[] = []
  for (let i = 0; i < (p.envWorkers ?? 1); i++)
    envWorkers.push(
      await startEnvWorker(system, transport, {
        run: config.run,
        id: `${id}-env-${i}`,
        tasks,
        capacity: Math.max(64, p.concurrency),
        seed: runSeeds(config.seed).envWorker(i),
      }),
    )
  // The engines must start from the learner's first weights (version 0: the SFT checkpoint, or the
  // initial weights), not from weights of their own: wait until the learner has published them.
  const store = await WeightStore.open(transport, config.run)
  for (let pause = 100; !(await store.latest('policy')); pause = Math.min(pause * 2, 2_000)) {
    if (pause === 100) log('waiting for the learner to publish the first weights (cold start running)')
    await unlessAborted(
      new Promise((r) => setTimeout(r, pause)),
      options.signal,
      () => new StartAbortedError('rollout', "the learner's first weights"),
    )
  }
  const engines: PolicyEngine[] = []
  for (let i = 0; i < p.freshEngines; i++)
    engines.push(
      await startPolicyEngine(system, transport, {
        run: config.run,
        id: `${id}-fresh-${i}`,
        modelConfig,
        stale: false,
        drainTimeoutMs: NODE_ENGINE_DRAIN_MS,
        log,
      }),
    )
  for (let i = 0; i < p.staleEngines; i++)
    engines.push(
      await startPolicyEngine(system, transport, {
        run: config.run,
        id: `${id}-stale-${i}`,
        modelConfig,
        stale: true,
        staleEvery: p.staleEvery,
        drainTimeoutMs: NODE_ENGINE_DRAIN_MS,
        log,
      }),
    )

  // The newest learner version announced (the groups record it as `started_version`).
  let version = 0
  const versionWaiters: { at: number; resolve: () => void }[] = []
  const weightsSub = transport.subscribe(Subjects.weights(config.run, 'policy'), {
    accepts: new MessageRegistry([WeightsPublished]),
    handler: (m) => {
      version = Math.max(version, (m.payload as { version: number }).version)
      for (const w of versionWaiters.splice(0))
        if (version >= w.at) w.resolve()
        else versionWaiters.push(w)
    },
  })
  const untilVersion = (at: number) =>
    version >= at ? Promise.resolve() : new Promise<void>((resolve) => versionWaiters.push({ at, resolve }))

  const router = new PolicyRouter(
    transport,
    config.run,
    p.staleEngines > 0 ? p.rho : 0,
    createRng(runSeeds(config.seed).policyRouter),
  )
  const publisher = openTrajectoryPublisher(transport, config.run)

  // The dynamic triad (RLAnything). Step reward: a reward-model actor in this process (more may
  // join the queue group elsewhere) judges every episode's steps; its weights follow the learner's
  // `reward` announcements. Adaptive tasks: the env adapter takes every group and moves the levels.
  const triad = config.triad
  const stopTriad: (() => Promise<void>)[] = []
  let judge: StepJudge | undefined
  if (triad?.stepReward.enabled) {
    const reward = await startRewardModel(system, transport, config.run, {
      model: { config: modelConfig, tokenizer, seed: runSeeds(config.seed).rewardModel },
      m: triad.stepReward.m,
      seed: runSeeds(config.seed).rewardActor,
    })
    const store = await WeightStore.open(transport, config.run)
    let rmVersion = -1
    let loading = Promise.resolve()
    const load = (announcement: { version: number; key: string }) => {
      loading = loading.then(async () => {
        if (announcement.version <= rmVersion) return
        try {
          const weights = (await store.load(announcement)) as Record<string, Float32Array<ArrayBuffer>>
          await reward.ref.ask(RewardLoadWeights.make({ version: announcement.version, weights }), 60_000)
          rmVersion = announcement.version
        } catch (err) {
          log(`reward weights v${announcement.version} not loaded: ${(err as Error).message}`)
        }
      })
    }
    const rmSub = transport.subscribe(Subjects.weights(config.run, 'reward'), {
      accepts: new MessageRegistry([WeightsPublished]),
      handler: (m) => load(m.payload as PayloadOf<typeof WeightsPublished>),
    })
    const latest = await store.latest('reward')
    if (latest) load(latest)
    judge = new StepJudge(
      remoteActor(transport, Subjects.rewardJudge(config.run), { replies: rewardReplies }),
      triad,
    )
    stopTriad.push(async () => {
      await rmSub.stop()
      await loading
      await reward.exposed.stop()
      await reward.ref.stop()
    })
  }
  const view = new DifficultyView()
  const adapter = triad?.adaptiveTasks
    ? await startEnvAdapter(system, transport, {
        run: config.run,
        id,
        switches: triad,
        adapter: {
          tasks: triad.levels,
          window: Math.max(1, triad.adaptEvery * p.minBatchGroups * config.rl.groupSize),
          raiseAt: triad.adaptHigh,
          lowerAt: triad.adaptLow,
          granularity: 'task',
        },
      })
    : undefined
  if (adapter)
    stopTriad.push(async () => {
      await adapter.exposed.stop()
      await adapter.ref.stop()
    })

  const driver = new RolloutDriver(
    id,
    {
      env: new EnvClient(transport, config.run),
      policy: router,
      tokenizer,
      ...(judge ? { annotate: stepJudgeAnnotator(judge, tokenizer, config.model.contextLength - 1) } : {}),
    },
    rolloutSettingsOf(config, judge !== undefined),
    async (group) => {
      await publisher.publish(group)
      if (adapter) {
        const reply = await adapter.ref.ask(TrajectoryGroup.make(group), 30_000)
        if (
          reply.type === EnvDifficulty.type &&
          view.update(reply.payload as PayloadOf<typeof EnvDifficulty>)
        )
          for (const t of config.tasks) {
            const level = view.levelFor(t.name, group.index)
            if (level !== undefined) driver.setDifficulty(t.name, level)
          }
      }
    },
    () => version,
  )

  const report = reportMetrics(transport, config.run, 'rollout', id)
  const reportNow = () =>
    report(
      {
        ...driver.metrics(),
        'rollout/turns_fresh': router.counts.fresh,
        'rollout/turns_stale': router.counts.stale,
        'rollout/stale_fallbacks': router.counts.staleFallback,
        'pipeline/backpressure_waits': publisher.waits,
        ...(triad ? switchMetrics(triad) : {}),
        ...(judge ? judge.metrics() : {}),
      },
      version,
    )
  const timer = setInterval(reportNow, METRICS_INTERVAL_MS)

  let stopping = false
  let onStop!: () => void
  const stopped = new Promise<void>((resolve) => {
    onStop = resolve
  })
  const done = (async () => {
    if (p.mode === 'async') {
      await driver.runForever((err) => {
        if (!(err instanceof PublisherClosedError)) log(`group failed: ${(err as Error).message}`)
      })
      return
    }
    while (!stopping && version < config.maxSteps) {
      const at = version
      await driver.runBatch(p.minBatchGroups)
      await untilVersion(at + 1)
      // The next batch must come from the new weights: wait for the fresh engines to load them.
      await Promise.race([
        Promise.all(engines.slice(0, p.freshEngines).map((e) => e.whenVersion(at + 1))),
        stopped,
      ])
    }
  })()
  return {
    done,
    stop: async () => {
      const t0 = Date.now()
      stopping = true
      onStop()
      // The agent loops end first, while the services under them still run. The groups in flight
      // are not waited for (in one process that took over a minute with the quickstart model):
      // `driver.stop()` gives up their requests at once (a request to a server that stops would
      // otherwise wait out "no responders" up to its deadline, 30 s to 2 min, past the process's
      // grace), and the publisher takes no new group (a publish waiting for room in a full buffer,
      // the learner being done, would hold the stop up to its deadline); a publish already sent
      // waits for its acknowledgement, so no group that reached the stream is lost.
      driver.stop()
      publisher.close()
      for (const w of versionWaiters.splice(0)) w.resolve()
      const ended = await settledWithin(done, LOOPS_END_MS)
      const loopsMs = Date.now() - t0
      if (!ended)
        log(`the agent loops did not end within ${LOOPS_END_MS} ms; stopping the services under them`)
      clearInterval(timer)
      // A last report, so a short run still records what the rollout side did.
      reportNow()
      await transport.flush().catch(() => undefined)
      await weightsSub.stop()
      await Promise.all(engines.map((e) => e.stop()))
      for (const s of stopTriad.reverse()) await s()
      await Promise.all(envWorkers.map((w) => w.stop()))
      await controller.stop()
      log(`stopped in ${Date.now() - t0} ms (agent loops ended in ${loopsMs} ms)`)
    },
  }
}

/**
 * How long a stop waits for the agent loops to end (their requests are given up at once; a publish
 * in flight waits for its acknowledgement), ms. Well inside a worker's 10 s shutdown bound.
 */
const LOOPS_END_MS = 3_000

/** Waits for `p` to settle, at most `ms`; true when it did. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms)
    }),
  ])
  clearTimeout(timer)
  return settled
}
