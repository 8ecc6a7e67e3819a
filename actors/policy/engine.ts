import {
  type BatcherStats,
  ConfigError,
  ContinuousBatcher,
  type ContinuousBatcherOptions,
  createRng,
  createTransformer,
  disposeTransformer,
  fullConfig,
  fullLoraConfig,
  initAdapters,
  type LoraConfig,
  type Rng,
  ShapeError,
  type Transformer,
  type TransformerConfig,
  withAdapters,
} from '../../gpu/index.ts'
import {
  type Envelope,
  ErrorCode,
  errorReply,
  MessageRegistry,
  MetricsReport,
  type Millis,
  metricRecord,
  type PayloadOf,
  PolicyGenerate,
  PolicyGenerated,
  QueueGroups,
  Subjects,
  WeightsPublished,
} from '../../protocols/index.ts'
import {
  type ActorRef,
  type ActorSystem,
  type Behaviour,
  type Clock,
  type Exposed,
  exposeActor,
  type Served,
  type SupervisionPolicy,
  systemClock,
  type Transport,
  TransportClosedError,
} from '../runtime/index.ts'
import { type WeightMap, WeightStore, type WeightsAnnouncement } from '../weights/index.ts'
import { acceptsVersion } from './version-policy.ts'

/** Where an engine reads announced weights from (a `WeightStore`, or a stand-in in tests). */
export interface WeightSource {
  /** The weights an announcement names. */
  load(announcement: WeightsAnnouncement): Promise<WeightMap>
  /** The newest stored version `accept` takes (an engine starting up loads it). */
  latest?(model: string, accept: (version: number) => boolean): Promise<WeightsAnnouncement | undefined>
}

/**
 * How long a stopping engine of a triad process (the rollout node's engines, `triad worker --role
 * policy|policy-stale`) serves the generate requests it is running, ms. The rollout node's own
 * agent loops have given theirs up by then; only loops of other rollout processes (the engines
 * serve one queue group) still wait, and a cut-off request fails its episode, which they retry.
 * The engines' default (10 s) spent 5 s on unwanted work at the quickstart's size, and would take
 * the whole of the supervisor's grace before SIGKILL.
 */
export const NODE_ENGINE_DRAIN_MS: Millis = 1_000

/** Options of `startPolicyEngine`. */
export interface PolicyEngineOptions {
  /** How the actor's crashes are handled (`SpawnOptions.supervision`); the actor system's default when absent. */
  supervision?: SupervisionPolicy
  /** Run id (subjects `triad.<run>.*`). */
  run: string
  /** This engine's id (a single subject token); reported in every reply as `engine`. */
  id: string
  /** A stale engine serves `Subjects.policyStale` and takes new weights only every `staleEvery` versions. */
  stale?: boolean
  /** Stale engines take version v only when `v % staleEvery === 0` (or it is the first one seen). Default 25 (AgentRL). */
  staleEvery?: number
  /** Model size; must match the announced weights. */
  modelConfig: TransformerConfig
  /** Initial weights (version 0 until an announcement is taken); default `initWeights(modelConfig, seed)`. */
  weights?: WeightMap
  /**
   * LoRA: the frozen base every version shares (a model without adapters, `modelConfig` its
   * config) and the adapters' settings. Announced versions then carry the adapters alone (a small
   * object instead of the whole model), each run as `withAdapters(base, adapters)`; `weights` are
   * initial adapters (default `initAdapters`, whose zero B leaves the base's output unchanged).
   * The engine never frees the base.
   */
  lora?: { base: Transformer; config: LoraConfig }
  /**
   * Seed of the default initial weights, and (mixed with `id`) of the sampling seeds drawn for
   * requests that carry none, so repeated prompts and different engines get different samples;
   * default 0.
   */
  seed?: number
  /** Model name in `weights.published` (`Subjects.weights(run, model)`); default `policy`. */
  model?: string
  /** Weights source; default the run's `WeightStore` on the transport's medium. */
  weightSource?: WeightSource
  /** At start, load the newest stored version the engine would take (default true). */
  loadLatest?: boolean
  /** Most sequences decoded together (default 64). */
  maxBatch?: number
  /** Requests the actor holds at once (default 1024); more wait in its mailbox. */
  concurrency?: number
  /** On `stop`, how long running requests may take to finish before they are failed, ms (default 10,000). */
  drainTimeoutMs?: Millis
  /** Interval of `metrics.report`, ms (default 5,000; 0 for none). */
  metricsIntervalMs?: Millis
  clock?: Clock
  /** Passed to the batcher (tests hold the loop with it). */
  stepGate?: ContinuousBatcherOptions['stepGate']
  /** Prefill chunk budget and prefix-cache size of the batcher (see `ContinuousBatcherOptions`). */
  batcher?: Pick<ContinuousBatcherOptions, 'prefillTokens' | 'prefixCacheTokens'>
  /** Where load failures are reported; default one line on stderr. */
  log?: (line: string) => void
}

/** Counters of a policy engine. */
export interface PolicyEngineStats extends BatcherStats {
  /** Versions taken since start, in order (the initial one first). */
  loaded: number[]
  /** Announcements not taken (stale rule or not newer). */
  skipped: number
  /** Announced versions that failed to load. */
  loadFailures: number
}

/** A running policy engine. */
export interface PolicyEngine {
  readonly ref: ActorRef
  readonly exposed: Exposed
  /** The version new requests run on. */
  version(): number
  stats(): PolicyEngineStats
  /** Resolves once the engine runs on `version` or newer. */
  whenVersion(version: number): Promise<void>
  stop(): Promise<void>
}

/** Messages a policy engine accepts on its subject. */
export const policyAccepts = new MessageRegistry([PolicyGenerate])
/** Replies of a policy engine. */
export const policyReplies = new MessageRegistry([PolicyGenerated])
const weightsAccepts = new MessageRegistry([WeightsPublished])

/** The mutable state of one engine incarnation. */
interface EngineState {
  batcher: ContinuousBatcher
  /** Whether the current weights came from an announcement (or the store) rather than the seed. */
  announced: boolean
  /** Newest version accepted so far (loaded or loading). */
  target: number
  /** Serialises weight loads. */
  loading: Promise<void>
  loaded: number[]
  skipped: number
  loadFailures: number
  /** Draws a sampling seed for each request that has none. */
  seeds: Rng
}

/**
 * Spawns a policy engine actor and exposes it: `policy.generate` on `Subjects.policyFresh(run)`
 * (queue group `policy.fresh`, NATS service `triad-policy`) or, when `stale`, on
 * `Subjects.policyStale(run)` (`policy.stale`, `triad-policy-stale`).
 *
 * Requests never wait for each other in the mailbox: the actor runs with `concurrency` and hands
 * each request to a `ContinuousBatcher`, which shares forward passes among all of them. The engine
 * subscribes to `weights.published` and swaps weights without dropping requests: a generation in
 * flight finishes on the weights it started with and reports that version. Every
 * `metricsIntervalMs` it publishes `metrics.report` with `engine/tokens_per_s`,
 * `engine/batch_size_mean` and `engine/version` on `Subjects.metrics(run, role)` (role `policy` or
 * `policy-stale`), and once more when it stops (over the time since the previous report, unless
 * that was under 1 s ago).
 *
 * @throws ConfigError on bad options (bad `staleEvery`); ConfigError/ShapeError from
 *   gpu/ for a bad model config or initial weights.
 */
export async function startPolicyEngine(
  system: ActorSystem,
  transport: Transport,
  options: PolicyEngineOptions,
): Promise<PolicyEngine> {
  const stale = options.stale ?? false
  const staleEvery = options.staleEvery ?? 25
  if (!Number.isInteger(staleEvery) || staleEvery < 1)
    throw new ConfigError('staleEvery', staleEvery, 'must be a positive integer')
  fullConfig(options.modelConfig) // throws ConfigError on a bad size, before anything starts
  const modelName = options.model ?? 'policy'
  const role = stale ? 'policy-stale' : 'policy'
  const clock = options.clock ?? systemClock
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const source = options.weightSource ?? (await WeightStore.open(transport, options.run))
  let live: EngineState | undefined
  let versionWaiters: { version: number; resolve: () => void }[] = []
  const notifyVersion = (version: number) => {
    const ready = versionWaiters.filter((w) => version >= w.version)
    versionWaiters = versionWaiters.filter((w) => version < w.version)
    for (const w of ready) w.resolve()
  }

  const lora = options.lora
  const makeModel = (weights: WeightMap | undefined) =>
    lora
      ? withAdapters(
          lora.base,
          weights ?? initAdapters(lora.base.config, fullLoraConfig(lora.config), options.seed ?? 0),
          lora.config,
        )
      : createTransformer(options.modelConfig, weights ? { weights } : { seed: options.seed ?? 0 })

  /** Whether this engine takes `version` now. */
  const takes = (state: EngineState, version: number) =>
    acceptsVersion({ stale, staleEvery, current: state.target, announced: state.announced }, version)

  const swapTo = async (state: EngineState, a: WeightsAnnouncement) => {
    if (a.version < state.target) return // a newer one was accepted meanwhile
    let model: Transformer
    try {
      model = makeModel(await source.load(a))
    } catch (err) {
      state.loadFailures++
      log(
        `policy engine ${options.id}: cannot load ${a.model} version ${a.version}: ${(err as Error).message}`,
      )
      return
    }
    if (state !== live || a.version < state.target) {
      disposeTransformer(model)
      return
    }
    state.batcher.setModel(model, a.version)
    state.loaded.push(a.version)
    notifyVersion(a.version)
  }

  const behaviour: Behaviour<EngineState> = {
    init: async () => {
      let initial: WeightsAnnouncement | undefined
      if ((options.loadLatest ?? true) && source.latest) {
        // A stale engine prefers the newest multiple of staleEvery; if that was pruned, the newest.
        initial = await source.latest(modelName, (v) => !stale || v % staleEvery === 0).catch(() => undefined)
        if (!initial && stale) initial = await source.latest(modelName, () => true).catch(() => undefined)
      }
      const weights = initial ? await source.load(initial).catch(() => undefined) : undefined
      if (!weights) initial = undefined
      let model: Transformer
      try {
        model = makeModel(weights ?? options.weights)
      } catch (err) {
        if (!weights) throw err
        log(
          `policy engine ${options.id}: stored version ${initial?.version} does not fit: ${(err as Error).message}`,
        )
        initial = undefined
        model = makeModel(options.weights)
      }
      const version = initial?.version ?? 0
      const state: EngineState = {
        batcher: new ContinuousBatcher(model, {
          ...options.batcher,
          maxBatch: options.maxBatch,
          version,
          onModelRetired: (m) => disposeTransformer(m),
          stepGate: options.stepGate,
        }),
        announced: initial !== undefined,
        target: version,
        loading: Promise.resolve(),
        loaded: [version],
        skipped: 0,
        loadFailures: 0,
        seeds: createRng((options.seed ?? 0) ^ fnv1a(options.id)),
      }
      live = state
      notifyVersion(version)
      return state
    },
    receive: async (state, message) => {
      if (message.type === WeightsPublished.type) {
        const a = message.payload as WeightsAnnouncement
        if (a.model !== modelName || !takes(state, a.version)) {
          state.skipped++
          return undefined
        }
        state.announced = true
        state.target = a.version
        state.loading = state.loading.then(() => swapTo(state, a))
        await state.loading
        return undefined
      }
      const p = message.payload as PayloadOf<typeof PolicyGenerate>
      try {
        const g = await state.batcher.submit(p.prompt, {
          maxNewTokens: p.max_new_tokens,
          temperature: p.temperature,
          top_p: p.top_p,
          stopTokens: p.stop_tokens,
          seed: p.seed ?? state.seeds.int(2 ** 31),
        })
        return PolicyGenerated.make({
          tokens: g.tokens as Int32Array<ArrayBuffer>,
          logprobs: g.logprobs as Float32Array<ArrayBuffer>,
          version: g.version,
          finish_reason: g.finishReason,
          engine: options.id,
          stale,
        })
      } catch (err) {
        // Bad input is a reply, not a crash (the boundary's schema cannot know the vocabulary).
        if (err instanceof ShapeError || err instanceof ConfigError)
          return errorReply({ code: ErrorCode.InvalidMessage, message: err.message })
        throw err
      }
    },
    stop: async (state) => {
      const model = state.batcher.model
      await state.batcher.close()
      disposeTransformer(model)
      if (live === state) live = undefined
    },
  }

  const name = `${role}-${options.id}`
  const ref = system.spawn(name, behaviour, {
    concurrency: options.concurrency ?? 1024,
    ...(options.supervision ? { supervision: options.supervision } : {}),
  })
  const weightsSub: Served = transport.subscribe(Subjects.weights(options.run, modelName), {
    accepts: weightsAccepts,
    handler: (m: Envelope) => {
      if (!ref.isStopped()) ref.tell(m)
    },
  })

  const stats = (): PolicyEngineStats => {
    const s = live
    if (!s)
      return {
        submitted: 0,
        completed: 0,
        tokens: 0,
        decodeSteps: 0,
        batchRows: 0,
        prefills: 0,
        prefillTokens: 0,
        prefixHits: 0,
        prefixTokensSaved: 0,
        prefillMs: 0,
        decodeMs: 0,
        active: 0,
        waiting: 0,
        version: 0,
        loaded: [],
        skipped: 0,
        loadFailures: 0,
      }
    return { ...s.batcher.stats(), loaded: [...s.loaded], skipped: s.skipped, loadFailures: s.loadFailures }
  }

  const exposed = await exposeActor(transport, ref, {
    subject: stale ? Subjects.policyStale(options.run) : Subjects.policyFresh(options.run),
    queue: stale ? QueueGroups.policyStale : QueueGroups.policyFresh,
    accepts: policyAccepts,
    service: {
      name: stale ? 'triad-policy-stale' : 'triad-policy',
      description: stale
        ? 'stale policy engine (continuous batching)'
        : 'policy engine (continuous batching)',
      metadata: { run: options.run, id: options.id, stale: String(stale), staleEvery: String(staleEvery) },
      stats: () => {
        const s = stats()
        return {
          tokens_generated: s.tokens,
          version: s.version,
          requests_completed: s.completed,
          active: s.active,
          waiting: s.waiting,
          batch_size_mean: s.decodeSteps ? s.batchRows / s.decodeSteps : 0,
        }
      },
    },
  })

  // Metrics: rates over each interval.
  let timer: unknown
  const interval = options.metricsIntervalMs ?? 5_000
  let last = { time: clock.now(), tokens: 0, steps: 0, rows: 0, busyMs: 0 }
  let reports = 0
  /** Publishes the rates since the previous report; false when the transport is closed. */
  const publishReport = (): boolean => {
    const s = stats()
    const now = clock.now()
    const seconds = Math.max(1e-3, (now - last.time) / 1000)
    const steps = s.decodeSteps - last.steps
    // Metrics are best effort: a transport closed under a running engine (its process shutting
    // down) ends the reports instead of throwing from the timer, where nothing could catch it.
    try {
      transport.publish(
        Subjects.metrics(options.run, role),
        MetricsReport.make({
          role,
          id: options.id,
          step: s.version,
          time: Date.now(),
          values: metricRecord({
            'engine/tokens_per_s': (s.tokens - last.tokens) / seconds,
            'engine/batch_size_mean': steps > 0 ? (s.batchRows - last.rows) / steps : 0,
            'engine/version': s.version,
            // Share of the interval spent in prefill and decode (the rest: idle, or the process's
            // other work, such as step judging on the same thread).
            'engine/busy_frac': Math.max(0, s.prefillMs + s.decodeMs - last.busyMs) / 1000 / seconds,
          }),
        }),
      )
    } catch (err) {
      if (err instanceof TransportClosedError) return false
      throw err
    }
    reports++
    last = {
      time: now,
      tokens: s.tokens,
      steps: s.decodeSteps,
      rows: s.batchRows,
      busyMs: s.prefillMs + s.decodeMs,
    }
    return true
  }
  const report = () => {
    timer = publishReport() ? clock.setTimeout(report, interval) : undefined
  }
  if (interval > 0) timer = clock.setTimeout(report, interval)

  return {
    ref,
    exposed,
    version: () => stats().version,
    stats,
    whenVersion: (version) =>
      new Promise<void>((resolve) => {
        if (live && live.batcher.version >= version) return resolve()
        versionWaiters.push({ version, resolve })
      }),
    stop: async () => {
      const reporting = timer !== undefined
      if (timer !== undefined) clock.clearTimeout(timer)
      timer = undefined
      // A last report over the time since the previous one, so a phase shorter than the interval
      // (the tiny recipe's RL lasts a few seconds) still records the engine's throughput. After a
      // report less than 1 s ago it is left out: a rate over a few ms says little.
      if (reporting && (reports === 0 || clock.now() - last.time >= 1_000)) publishReport()
      await exposed.stop()
      await weightsSub.stop()
      await live?.batcher.drain(options.drainTimeoutMs ?? 10_000)
      await ref.stop()
    },
  }
}

/** 32-bit FNV-1a hash of a string (mixes the engine id into its request seeds). */
function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
  return h
}
