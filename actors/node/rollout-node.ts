import { chooseBackend, type TransformerConfig } from '../../gpu/index.ts'
import {
  MessageRegistry,
  type Millis,
  type PayloadOf,
  RewardLoadWeights,
  Subjects,
  WeightsPublished,
} from '../../protocols/index.ts'
import { DifficultyView, startEnvAdapter } from '../env-adapter/index.ts'
import { startEnvController, startEnvWorker, tasks } from '../environment/index.ts'
import { NODE_ENGINE_DRAIN_MS, type PolicyEngine, startPolicyEngine } from '../policy/index.ts'
import type { ActorSystem, Transport } from '../runtime/index.ts'
import {
  type ChildContext,
  type ChildSpec,
  defaultSupervision,
  Restart,
  runSeeds,
  Strategy,
  startTree,
  type TreeSpec,
  unlessAborted,
} from '../runtime/index.ts'
import { type RewardActorOptions, type RewardModelOptions, startRewardModel } from '../triad/index.ts'
import { WeightStore } from '../weights/index.ts'
import type { NodeConfig } from './config.ts'
import { StartAbortedError } from './errors.ts'
import type { NodeHandle, NodeOptions } from './learner-node.ts'
import { loadPretrainedPolicy, type PretrainedPolicy } from './pretrained-policy.ts'
import { type RolloutModel, startRolloutActor } from './rollout-actor.ts'
import { type PolicyVersionWatch, RolloutNames } from './rollout-names.ts'
import { fetchRunTokenizer } from './run-tokenizer.ts'

/** How long a child of the rollout tree may take to stop, ms (the rollout: `LOOPS_END_MS` and a last report). */
const CHILD_SHUTDOWN_MS: Millis = 5_000

/**
 * The rollout process's supervision tree, read top to bottom (started in this order, stopped in
 * the reverse one, so the agent loops end first while the services under them still run):
 *
 * - `env-controller`: the environment controller (NATS services `triad-env-controller`,
 *   `triad-env-admin`): worker registry, session routing, containers.
 * - `env-worker/<i>`: `pipeline.envWorkers` env workers (`triad-env-worker`) hosting sessions; more
 *   may join from other machines with `triad worker --role env`.
 * - `policy-weights`: follows the learner's policy announcements; its start waits for the first
 *   weights (version 0: the SFT checkpoint or the initial weights), so the engines start from them.
 * - `policy/<i>`, `stale-policy/<i>`: the fresh and stale policy engines (`triad-policy`,
 *   `triad-policy-stale`).
 * - `reward-model` (step rewards on): the reward model (`triad-reward`), its weights following the
 *   learner's `reward` announcements.
 * - `env-adapter` (adaptive tasks on): task difficulty from measured accuracy (`triad-env-adapter`).
 * - `rollout`: the rollout actor (`triad-rollout`): one agent loop per trajectory, groups to the
 *   trajectory stream. Significant: in synchronous mode its end at `maxSteps` ends the tree.
 *
 * The children find each other by registered name (`RolloutNames`): `policy-weights`, the engines
 * and `env-adapter` register their handles while they run, and the rollout looks them up.
 *
 * One-for-one: a failed child (an actor whose handler threw) is started again alone, after a
 * backoff; more than 5 restarts in 60 s end the tree and the process, and the process supervisor
 * starts a new one. No group is lost either way: a group reaches the stream before it counts.
 */
export function rolloutTree(
  transport: Transport,
  config: NodeConfig,
  id: string,
  modelConfig: TransformerConfig,
  model: RolloutModel,
  options: {
    log: (line: string) => void
    signal?: AbortSignal
    onLoopsEnded?: (ms: number) => void
    /**
     * A pretrained policy: its shared base and LoRA settings (the engines take adapter-only
     * versions; the reward model is its own adapters on the same base) and its chat format.
     */
    pretrained?: PretrainedPolicy
  },
): TreeSpec {
  const p = config.pipeline
  const triad = config.triad
  const log = options.log
  const child = (id: string, start: ChildSpec['start'], restart: Restart = Restart.Permanent): ChildSpec => ({
    id,
    start,
    restart,
    shutdownMs: CHILD_SHUTDOWN_MS,
  })
  const engine = (i: number, stale: boolean): ChildSpec =>
    child(`${stale ? 'stale-policy' : 'policy'}/${i}`, async (ctx) => {
      const e = await startPolicyEngine(ctx.system, transport, {
        run: config.run,
        id: `${id}-${stale ? 'stale' : 'fresh'}-${i}`,
        modelConfig,
        ...(options.pretrained
          ? { lora: { base: options.pretrained.base, config: options.pretrained.lora } }
          : {}),
        stale,
        ...(stale ? { staleEvery: p.staleEvery } : {}),
        drainTimeoutMs: NODE_ENGINE_DRAIN_MS,
        supervision: ctx.supervision,
        log,
      })
      const unregister = ctx.system.register(
        stale ? RolloutNames.staleEngine(i) : RolloutNames.freshEngine(i),
        e,
      )
      return {
        actors: [e.ref],
        stop: async () => {
          unregister()
          await e.stop()
        },
      }
    })
  return {
    name: 'rollout',
    strategy: Strategy.OneForOne,
    intensity: defaultSupervision.maxRestarts,
    periodMs: defaultSupervision.withinMs,
    backoff: defaultSupervision.backoff,
    children: [
      child('env-controller', async (ctx) => {
        const c = await startEnvController(ctx.system, transport, {
          run: config.run,
          tasks,
          supervision: ctx.supervision,
        })
        return { actors: [c.ref], stop: () => c.stop() }
      }),
      ...range(p.envWorkers ?? 1).map((i) =>
        child(`env-worker/${i}`, async (ctx) => {
          const w = await startEnvWorker(ctx.system, transport, {
            run: config.run,
            id: `${id}-env-${i}`,
            tasks,
            capacity: Math.max(64, p.concurrency),
            seed: runSeeds(config.seed).envWorker(i),
            supervision: ctx.supervision,
          })
          return { actors: [w.ref], stop: () => w.stop() }
        }),
      ),
      child('policy-weights', (ctx) => followPolicyWeights(ctx, transport, config.run, log, options.signal)),
      ...range(p.freshEngines).map((i) => engine(i, false)),
      ...range(p.staleEngines).map((i) => engine(i, true)),
      ...(triad?.stepReward.enabled
        ? [
            child('reward-model', async (ctx) => {
              const reward = await startRewardModel(ctx.system, transport, config.run, {
                ...rewardActorOptionsOf(
                  config,
                  options.pretrained
                    ? { pretrained: options.pretrained }
                    : { config: modelConfig, tokenizer: model.tokenizer! },
                ),
                spawn: { supervision: ctx.supervision },
              })
              const follow = await followRewardWeights(transport, config.run, reward.ref, log)
              return {
                actors: [reward.ref],
                stop: async () => {
                  await follow.stop()
                  await reward.exposed.stop()
                  await reward.ref.stop()
                },
              }
            }),
          ]
        : []),
      ...(triad?.adaptiveTasks
        ? [
            child('env-adapter', async (ctx) => {
              const adapter = await startEnvAdapter(ctx.system, transport, {
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
                spawn: { supervision: ctx.supervision },
              })
              const unregister = ctx.system.register(RolloutNames.envAdapter, {
                ref: adapter.ref,
                view: new DifficultyView(),
              })
              return {
                actors: [adapter.ref],
                stop: async () => {
                  unregister()
                  await adapter.exposed.stop()
                  await adapter.ref.stop()
                },
              }
            }),
          ]
        : []),
      {
        id: 'rollout',
        restart: Restart.Transient,
        significant: true,
        shutdownMs: CHILD_SHUTDOWN_MS,
        start: (ctx) => startRolloutActor(ctx, transport, config, id, model, log, options.onLoopsEnded),
      },
    ],
  }
}

/**
 * The reward-model actor's settings in a run: the model (triad's own over the run's tokenizer, or
 * its own adapters on the pretrained base) seeded `runSeeds(seed).rewardModel`, m judgements per
 * step (`triad.stepReward.m`) sampled at `triad.stepReward.temperature` (default 1), and the
 * actor's sampling seed.
 */
export function rewardActorOptionsOf(
  config: Pick<NodeConfig, 'seed' | 'triad'>,
  model: Pick<RewardModelOptions, 'config' | 'tokenizer' | 'pretrained'>,
): RewardActorOptions {
  const judge = config.triad?.stepReward
  return {
    model: { ...model, seed: runSeeds(config.seed).rewardModel, temperature: judge?.temperature ?? 1 },
    m: judge?.m ?? 3,
    seed: runSeeds(config.seed).rewardActor,
  }
}

/**
 * The rollout node: waits for the learner's tokenizer, then starts `rolloutTree` in `system`.
 * Environments are reached through the controller (`env.start`), wherever their workers run.
 * Finished groups go to the trajectory stream.
 * @throws StartAbortedError when `options.signal` aborts while it waits for the learner's tokenizer
 *   or first weights (children started by then are stopped).
 */
export async function startRolloutNode(
  system: ActorSystem,
  transport: Transport,
  config: NodeConfig,
  id: string,
  options: NodeOptions = {},
): Promise<NodeHandle> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[rollout] ${line}\n`))
  await chooseBackend({ backend: config.backend, threads: config.threads?.rollout, log })
  // A pretrained policy: its base loaded once, shared by every engine; its own tokenizer and template.
  const pretrained = config.pretrained ? await loadPretrainedPolicy(config) : undefined
  const tokenizer = pretrained
    ? undefined
    : await unlessAborted(
        fetchRunTokenizer(transport, config.run),
        options.signal,
        () => new StartAbortedError('rollout', "the learner's tokenizer"),
      )
  const modelConfig = pretrained?.modelConfig ?? { ...config.model, vocabSize: tokenizer!.vocabSize }
  const model: RolloutModel = {
    ...(tokenizer ? { tokenizer } : {}),
    ...(pretrained ? { chat: pretrained.chat } : {}),
  }
  let loopsMs = 0
  const spec = rolloutTree(transport, config, id, modelConfig, model, {
    log,
    ...(pretrained ? { pretrained } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onLoopsEnded: (ms) => {
      loopsMs = ms
    },
  })
  const tree = await startTree(system, spec, { log })
  return {
    done: tree.done,
    children: () => tree.children(),
    stop: async () => {
      const t0 = Date.now()
      await tree.stop()
      log(`stopped in ${Date.now() - t0} ms (agent loops ended in ${loopsMs} ms)`)
    },
  }
}

/**
 * The `policy-weights` child: follows `weights.published` for the policy in a `PolicyVersionWatch`,
 * registered as `RolloutNames.policyWeights` once the learner has published its first weights
 * (checked in the weight store, with a backoff of 100 ms doubling to 2 s).
 * @throws StartAbortedError when `signal` aborts first.
 */
async function followPolicyWeights(
  ctx: ChildContext,
  transport: Transport,
  run: string,
  log: (line: string) => void,
  signal: AbortSignal | undefined,
) {
  // The newest learner version announced (the groups record it as `started_version`).
  let version = 0
  const waiters: { at: number; resolve: () => void }[] = []
  const sub = transport.subscribe(Subjects.weights(run, 'policy'), {
    accepts: new MessageRegistry([WeightsPublished]),
    handler: (m) => {
      version = Math.max(version, (m.payload as PayloadOf<typeof WeightsPublished>).version)
      for (const w of waiters.splice(0))
        if (version >= w.at) w.resolve()
        else waiters.push(w)
    },
  })
  const watch: PolicyVersionWatch = {
    version: () => version,
    untilVersion: (at) =>
      version >= at ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ at, resolve })),
  }
  let unregister = () => {}
  const stop = async () => {
    unregister()
    for (const w of waiters.splice(0)) w.resolve()
    await sub.stop()
  }
  try {
    // The engines must start from the learner's first weights, not from weights of their own.
    const store = await WeightStore.open(transport, run)
    for (let pause = 100; !(await store.latest('policy')); pause = Math.min(pause * 2, 2_000)) {
      if (pause === 100) log('waiting for the learner to publish the first weights (cold start running)')
      await unlessAborted(
        new Promise((r) => setTimeout(r, pause)),
        signal,
        () => new StartAbortedError('rollout', "the learner's first weights"),
      )
    }
  } catch (err) {
    await stop()
    throw err
  }
  unregister = ctx.system.register(RolloutNames.policyWeights, watch)
  return { actors: [], stop }
}

/**
 * Loads every reward-model version the learner announces (and the newest one already published)
 * into the reward actor `ref`, in order; a version that fails to load is said on `log` and skipped.
 */
async function followRewardWeights(
  transport: Transport,
  run: string,
  ref: PolicyEngine['ref'],
  log: (line: string) => void,
) {
  const store = await WeightStore.open(transport, run)
  let rmVersion = -1
  let loading = Promise.resolve()
  const load = (announcement: { version: number; key: string }) => {
    loading = loading.then(async () => {
      if (announcement.version <= rmVersion) return
      try {
        const weights = (await store.load(announcement)) as Record<string, Float32Array<ArrayBuffer>>
        await ref.ask(RewardLoadWeights.make({ version: announcement.version, weights }), 60_000)
        rmVersion = announcement.version
      } catch (err) {
        log(`reward weights v${announcement.version} not loaded: ${(err as Error).message}`)
      }
    })
  }
  const sub = transport.subscribe(Subjects.weights(run, 'reward'), {
    accepts: new MessageRegistry([WeightsPublished]),
    handler: (m) => load(m.payload as PayloadOf<typeof WeightsPublished>),
  })
  const latest = await store.latest('reward')
  if (latest) load(latest)
  return {
    stop: async () => {
      await sub.stop()
      await loading
    },
  }
}

/** 0, 1, ..., n-1. */
function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i)
}
