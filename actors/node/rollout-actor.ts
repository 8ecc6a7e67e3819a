import { type ChatFormat, createRng, type Tokenizer, TriadChatFormat } from '../../gpu/index.ts'
import {
  EnvDifficulty,
  type Envelope,
  InvariantError,
  MessageRegistry,
  type MetricValues,
  metricRecord,
  type PayloadOf,
  RolloutState,
  RolloutStatus,
  Subjects,
  TrajectoryGroup,
} from '../../protocols/index.ts'
import { AgentRunner, Gateway } from '../gateway/index.ts'
import { McpTaskEnv } from '../mcp/index.ts'
import { openTrajectoryPublisher, PublisherClosedError } from '../pipeline/index.ts'
import { EnvClient, PolicyRouter, RolloutDriver } from '../rollout/index.ts'
import type { Behaviour, Child, ChildContext } from '../runtime/index.ts'
import {
  ActorStoppedError,
  envelope,
  exposeActor,
  remoteActor,
  runSeeds,
  type Transport,
} from '../runtime/index.ts'
import { rewardReplies, StepJudge, stepJudgeAnnotator, switchMetrics } from '../triad/index.ts'
import { type NodeConfig, rolloutSettingsOf } from './config.ts'
import { reportMetrics } from './report-metrics.ts'
import { RolloutNames } from './rollout-names.ts'

/** How often the rollout side publishes its metrics, ms. */
const METRICS_INTERVAL_MS = 2_000

/**
 * How long a stop waits for the agent loops to end (their requests are given up at once; a publish
 * in flight waits for its acknowledgement), ms. Well inside a worker's 10 s shutdown bound.
 */
export const LOOPS_END_MS = 3_000

/** The policy's tokenizer and chat format, as the agent loops render and parse turns with them. */
export interface RolloutModel {
  /** The run's own tokenizer (triad's model); absent with a pretrained policy, which has `chat`. */
  tokenizer?: Tokenizer
  /** A pretrained policy's tokenizer and chat template (`JinjaChatFormat`). */
  chat?: ChatFormat
}

/** Messages the rollout's service accepts: `rollout.status`. */
export const rolloutAccepts = new MessageRegistry([RolloutStatus])

/** The internal message that starts the agent loops (told once at start, never on the wire). */
const RUN = 'rollout.run'

/** The rollout actor's state: set by `stop`. */
interface RolloutActorState {
  stopping: boolean
}

/**
 * Starts the rollout actor (actor `rollout`, the last child of the rollout tree): the rollout
 * driver (one agent loop per trajectory, grouped G per task instance), its policy router over the
 * fresh and stale engines, and the publisher of finished groups to the trajectory stream. Its
 * `rollout.run` (told once at start) runs the loops; `rollout.status` answers at any time (the
 * actor handles messages concurrently). It is the NATS service `triad-rollout` on
 * `Subjects.rollout(run, id)`, its `$SRV.STATS` data the driver's counters. It publishes its
 * metrics every `METRICS_INTERVAL_MS` and once more when it stops.
 *
 * Asynchronous mode: the loops never wait for the learner (the stream's bound is the only
 * brake). Synchronous mode (the baseline): generate `minBatchGroups` groups, then wait for the next
 * weight version before the next batch; the child's `done` resolves at `maxSteps`.
 *
 * Its siblings are found by registered name (`RolloutNames`): the policy versions
 * (`policy-weights`) at start, the fresh engines and the env adapter when they are used. Step
 * rewards on, it judges through the reward model's service (`Subjects.rewardJudge`).
 * @throws InvariantError when no `policy-weights` child runs (the tree starts it before the rollout).
 */
export async function startRolloutActor(
  ctx: ChildContext,
  transport: Transport,
  config: NodeConfig,
  id: string,
  model: RolloutModel,
  log: (line: string) => void,
  /** Told how long the agent loops took to end at a stop, ms (from the stop's start). */
  onLoopsEnded: (ms: number) => void = () => {},
): Promise<Child> {
  const p = config.pipeline
  const triad = config.triad
  const { tokenizer, chat } = model
  const weights = ctx.system.whereis(RolloutNames.policyWeights)
  if (!weights) throw new InvariantError('the rollout tree starts policy-weights before the rollout')
  const judge = triad?.stepReward.enabled
    ? new StepJudge(
        remoteActor(transport, Subjects.rewardJudge(config.run), { replies: rewardReplies }),
        triad,
      )
    : undefined
  const router = new PolicyRouter(
    transport,
    config.run,
    p.staleEngines > 0 ? p.rho : 0,
    createRng(runSeeds(config.seed).policyRouter),
  )
  const publisher = openTrajectoryPublisher(transport, config.run)
  // Agent tasks (docs/gateway.md): their programs call the gateway, in front of the
  // same router, so their turns go to fresh and stale engines as the built-in tasks' do.
  const gateway = config.tasks.some((t) => t.agent)
    ? await Gateway.start({
        policy: router,
        chat: chat ?? new TriadChatFormat(tokenizer!),
        contextLength: config.model.contextLength,
        sampling: { temperature: p.temperature, top_p: p.top_p },
        maxInFlight: Math.max(256, 2 * p.concurrency),
      })
    : undefined
  if (gateway) log(`agent gateway on ${gateway.url}`)
  // MCP tasks: one environment per task (its pooled servers live as long as the rollout).
  const mcpEnvs = new Map<string, McpTaskEnv>()
  const mcpEnv = (task: string, spec: ConstructorParameters<typeof McpTaskEnv>[1]) => {
    let env = mcpEnvs.get(task)
    if (!env) {
      env = new McpTaskEnv(task, spec)
      mcpEnvs.set(task, env)
    }
    return env
  }
  const driver: RolloutDriver = new RolloutDriver(
    id,
    {
      env: new EnvClient(transport, config.run),
      policy: router,
      ...(tokenizer ? { tokenizer } : {}),
      ...(chat ? { chat } : {}),
      ...(gateway ? { agents: new AgentRunner(gateway) } : {}),
      ...(config.tasks.some((t) => t.mcp) ? { mcp: mcpEnv } : {}),
      ...(judge && (chat ?? tokenizer)
        ? { annotate: stepJudgeAnnotator(judge, (chat ?? tokenizer)!, config.model.contextLength - 1) }
        : {}),
    },
    rolloutSettingsOf(config, judge !== undefined),
    async (group) => {
      await publisher.publish(group)
      if (triad?.adaptiveTasks) {
        const adapter = ctx.system.whereis(RolloutNames.envAdapter)
        if (!adapter) throw new ActorStoppedError(RolloutNames.envAdapter.name, 'not running')
        const reply = await adapter.ref.ask(TrajectoryGroup.make(group), 30_000)
        if (
          reply.type === EnvDifficulty.type &&
          adapter.view.update(reply.payload as PayloadOf<typeof EnvDifficulty>)
        )
          for (const t of config.tasks) {
            const level = adapter.view.levelFor(t.name, group.index)
            if (level !== undefined) driver.setDifficulty(t.name, level)
          }
      }
    },
    () => weights.version(),
  )
  const metrics = (): MetricValues => ({
    ...driver.metrics(),
    'rollout/turns_fresh': router.counts.fresh,
    'rollout/turns_stale': router.counts.stale,
    'rollout/stale_fallbacks': router.counts.staleFallback,
    'pipeline/backpressure_waits': publisher.waits,
    ...(triad ? switchMetrics(triad) : {}),
    ...(judge ? judge.metrics() : {}),
    ...(gateway ? gateway.metrics() : {}),
  })
  const report = reportMetrics(transport, config.run, 'rollout', id)
  const reportNow = () => report(metrics(), weights.version())
  const timer = setInterval(reportNow, METRICS_INTERVAL_MS)

  let onStop!: () => void
  const stopped = new Promise<void>((resolve) => {
    onStop = resolve
  })
  const loops = async (state: RolloutActorState) => {
    if (p.mode === 'async') {
      await driver.runForever((err) => {
        if (!(err instanceof PublisherClosedError)) log(`group failed: ${(err as Error).message}`)
      })
      return
    }
    while (!state.stopping && weights.version() < config.maxSteps) {
      const at = weights.version()
      await driver.runBatch(p.minBatchGroups)
      await Promise.race([weights.untilVersion(at + 1), stopped])
      // The next batch must come from the new weights: wait for the fresh engines to load them.
      await Promise.race([
        Promise.all(
          Array.from({ length: p.freshEngines }, (_, i) =>
            ctx.system.whereis(RolloutNames.freshEngine(i))?.whenVersion(at + 1),
          ),
        ),
        stopped,
      ])
    }
  }
  let running: Promise<void> = Promise.resolve()
  let finish!: () => void
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  const behaviour: Behaviour<RolloutActorState> = {
    init: () => ({ stopping: false }),
    async receive(state, message: Envelope) {
      if (message.type === RolloutStatus.type)
        return RolloutState.make({
          version: weights.version(),
          groups: driver.metrics()['rollout/groups'] ?? 0,
          metrics: metricRecord(metrics()),
        })
      if (message.type !== RUN) return undefined
      running = loops(state)
      await running
      finish()
      return undefined
    },
    async stop(state) {
      const t0 = Date.now()
      state.stopping = true
      onStop()
      // The agent loops end first, while the services under them (the tree's earlier children)
      // still run. The groups in flight are not waited for (in one process that took over a minute
      // with the quickstart model): `driver.stop()` gives up their requests at once (a request to a
      // server that stops would otherwise wait out "no responders" up to its deadline, 30 s to
      // 2 min, past the process's grace), and the publisher takes no new group (a publish waiting
      // for room in a full buffer, the learner being done, would hold the stop up to its deadline);
      // a publish already sent waits for its acknowledgement, so no group that reached the stream
      // is lost.
      driver.stop()
      publisher.close()
      const ended = await settledWithin(running, LOOPS_END_MS)
      await gateway?.close()
      await Promise.all([...mcpEnvs.values()].map((e) => e.close()))
      onLoopsEnded(Date.now() - t0)
      if (!ended)
        log(`the agent loops did not end within ${LOOPS_END_MS} ms; stopping the services under them`)
      clearInterval(timer)
      // A last report, so a short run still records what the rollout side did.
      reportNow()
      await transport.flush().catch(() => undefined)
    },
  }
  const ref = ctx.system.spawn('rollout', behaviour, { supervision: ctx.supervision, concurrency: 16 })
  const exposed = await exposeActor(transport, ref, {
    subject: Subjects.rollout(config.run, id),
    accepts: rolloutAccepts,
    askTimeoutMs: 10_000,
    service: {
      name: 'triad-rollout',
      description: 'triad rollout driver: one agent loop per trajectory, groups to the trajectory stream',
      metadata: { run: config.run, id, mode: p.mode },
      stats: () => {
        const m = driver.metrics()
        return {
          version: weights.version(),
          groups: m['rollout/groups'] ?? 0,
          episodes: m['rollout/episodes'] ?? 0,
          retried: m['rollout/retried'] ?? 0,
        }
      },
    },
  })
  ref.tell(envelope(RUN, {}) as Envelope)
  return {
    actors: [ref],
    done,
    stop: async () => {
      await ref.stop()
      await exposed.stop()
    },
  }
}

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
