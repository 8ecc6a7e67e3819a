/**
 * `triad bench engine`: policy-engine tokens/s with 64 concurrent agent loops sharing continuous
 * batching, against the same kind of loops run one at a time, in the same run, through the same
 * engine over NATS (issue 7, second target).
 *
 * An agent loop here is `turns` generate calls on a growing context: the prompt, then after every
 * turn the generated tokens plus a stand-in tool result of `toolTokens` random tokens. Prompts start
 * at 48 to 96 tokens; each turn asks for `maxNewTokens` tokens at temperature 1 (no stop token, so
 * every request costs the same in both modes). Both modes use the prefix cache (an agent loop's
 * next turn prefills only its new suffix); a third measurement repeats the 64 loops on an engine
 * without it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  connectNats,
  policyReplies,
  remoteActor,
  startActorSystem,
  startNatsServer,
  startPolicyEngine,
} from '../../actors/index.ts'
import {
  type BackendChoice,
  chooseBackend,
  createRng,
  parameterCount,
  type TransformerConfig,
} from '../../gpu/index.ts'
import { type PayloadOf, PolicyGenerate, type PolicyGenerated, Subjects } from '../../protocols/index.ts'
import { defaultPolicyConfig } from '../commands/policy.ts'

type Generated = PayloadOf<typeof PolicyGenerated>

/** One mode's measurement. */
interface ModeResult {
  loops: number
  /** Loops running at once. */
  concurrency: number
  requests: number
  tokens: number
  seconds: number
  tokens_per_s: number
  /** Mean sequences per decode forward pass. */
  batch_size_mean: number
  /** Mean latency of one generate call, ms. */
  request_ms_mean: number
  /** Share of the engine's forward time spent in prefill passes. */
  prefill_time_fraction: number
  /** Engine time per generated token in decode passes, ms. */
  decode_ms_per_token: number
  /** Engine time per prompt token in prefill passes, ms. */
  prefill_ms_per_prompt_token: number
}

export async function run(options: { nats?: string; quick?: boolean }) {
  const quick = options.quick ?? false
  const settings = {
    concurrentLoops: 64,
    /** Loops of the one-at-a-time baseline (its rate does not depend on how many run). */
    sequentialLoops: quick ? 2 : 8,
    turns: quick ? 2 : 3,
    maxNewTokens: quick ? 16 : 32,
    toolTokens: 16,
    /** Rounds; each runs every mode once, in turn. */
    rounds: quick ? 1 : 2,
  }
  const backend: BackendChoice = await chooseBackend({ log: () => {} })
  const modelConfig: TransformerConfig = { ...defaultPolicyConfig(), contextLength: 512 }

  const dir = options.nats ? undefined : mkdtempSync(path.join(tmpdir(), 'triad-bench-engine-'))
  const server = dir ? await startNatsServer({ storeDir: dir, monitorPort: false }) : undefined
  const url = options.nats ?? server!.url
  const runId = `bench-engine-${process.pid}`
  const engineSide = await connectNats({ servers: url, run: runId, role: 'policy', id: 'bench' })
  const loopSide = await connectNats({ servers: url, run: runId, role: 'rollout', id: 'bench' })
  const system = startActorSystem({ name: 'bench-engine' })
  // Two engines with the same weights: the default one (prefix cache on) serves both main modes;
  // the stale-subject one has no prefix cache, to show what batching alone gives.
  const engineOptions = {
    run: runId,
    modelConfig,
    seed: 1,
    maxBatch: 64,
    metricsIntervalMs: 0,
    loadLatest: false,
  }
  const engine = await startPolicyEngine(system, engineSide, { ...engineOptions, id: 'bench' })
  const plainEngine = await startPolicyEngine(system, engineSide, {
    ...engineOptions,
    id: 'plain',
    stale: true,
    batcher: { prefixCacheTokens: 0 },
  })
  await engineSide.flush()
  const cached = remoteActor(loopSide, Subjects.policyFresh(runId), { replies: policyReplies })
  const plain = remoteActor(loopSide, Subjects.policyStale(runId), { replies: policyReplies })
  let policy = cached
  let serving = engine
  const vocab = modelConfig.vocabSize

  /** One agent loop; returns tokens generated and per-call latencies. */
  const agentLoop = async (loop: number, latencies: number[], turns: number, maxNewTokens: number) => {
    const rng = createRng(1000 + loop)
    const context = Array.from({ length: 48 + rng.int(49) }, () => rng.int(256))
    let tokens = 0
    for (let turn = 0; turn < turns; turn++) {
      const t0 = performance.now()
      const reply = await policy.ask(
        PolicyGenerate.make({
          prompt: Int32Array.from(context),
          max_new_tokens: maxNewTokens,
          temperature: 1,
          seed: loop * 100 + turn,
        }),
        600_000,
      )
      latencies.push(performance.now() - t0)
      const g = reply.payload as Generated
      tokens += g.tokens.length
      context.push(...g.tokens)
      for (let k = 0; k < settings.toolTokens; k++) context.push(rng.int(vocab))
    }
    return tokens
  }

  const measure = async (
    loops: number,
    concurrency: number,
    offset: number,
    turns = settings.turns,
    maxNewTokens = settings.maxNewTokens,
  ): Promise<ModeResult> => {
    const before = serving.stats()
    const latencies: number[] = []
    let next = 0
    let tokens = 0
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < loops) {
          const n = await agentLoop(offset + next++, latencies, turns, maxNewTokens)
          tokens += n
        }
      }),
    )
    const seconds = (performance.now() - t0) / 1000
    const after = serving.stats()
    const steps = after.decodeSteps - before.decodeSteps
    const prefillMs = after.prefillMs - before.prefillMs
    const decodeMs = after.decodeMs - before.decodeMs
    return {
      loops,
      concurrency,
      requests: latencies.length,
      tokens,
      seconds: Number(seconds.toFixed(3)),
      tokens_per_s: Number((tokens / seconds).toFixed(1)),
      batch_size_mean: Number((steps ? (after.batchRows - before.batchRows) / steps : 0).toFixed(2)),
      request_ms_mean: Number((latencies.reduce((a, b) => a + b, 0) / latencies.length).toFixed(1)),
      prefill_time_fraction: Number((prefillMs / (prefillMs + decodeMs)).toFixed(3)),
      decode_ms_per_token: Number((decodeMs / Math.max(1, after.batchRows - before.batchRows)).toFixed(3)),
      prefill_ms_per_prompt_token: Number(
        (prefillMs / Math.max(1, after.prefillTokens - before.prefillTokens)).toFixed(3),
      ),
    }
  }

  /** Sums rounds of one mode: rates over the summed time, means averaged over the rounds. */
  const combine = (parts: ModeResult[]): ModeResult & { rounds_tokens_per_s: number[] } => {
    const sum = (f: (m: ModeResult) => number) => parts.reduce((a, m) => a + f(m), 0)
    const mean = (f: (m: ModeResult) => number) => Number((sum(f) / parts.length).toFixed(3))
    const tokens = sum((m) => m.tokens)
    const seconds = sum((m) => m.seconds)
    return {
      loops: sum((m) => m.loops),
      concurrency: parts[0]!.concurrency,
      requests: sum((m) => m.requests),
      tokens,
      seconds: Number(seconds.toFixed(3)),
      tokens_per_s: Number((tokens / seconds).toFixed(1)),
      batch_size_mean: mean((m) => m.batch_size_mean),
      request_ms_mean: mean((m) => m.request_ms_mean),
      prefill_time_fraction: mean((m) => m.prefill_time_fraction),
      decode_ms_per_token: mean((m) => m.decode_ms_per_token),
      prefill_ms_per_prompt_token: mean((m) => m.prefill_ms_per_prompt_token),
      rounds_tokens_per_s: parts.map((m) => m.tokens_per_s),
    }
  }

  try {
    // Warm-up at both batch sizes on both engines (first use of a shape grows the wasm heap).
    await measure(2, 1, 10_000, 1, 8)
    await measure(64, 64, 20_000, 1, 8)
    policy = plain
    serving = plainEngine
    await measure(64, 64, 20_000, 1, 8)
    // The machine may be shared: modes alternate round by round so load swings hit all of them.
    const modes = { one: [] as ModeResult[], shared: [] as ModeResult[], plain: [] as ModeResult[] }
    for (let round = 0; round < settings.rounds; round++) {
      const offset = 1000 * round
      policy = cached
      serving = engine
      modes.one.push(await measure(settings.sequentialLoops, 1, offset))
      modes.shared.push(await measure(settings.concurrentLoops, settings.concurrentLoops, offset + 100))
      policy = plain
      serving = plainEngine
      modes.plain.push(await measure(settings.concurrentLoops, settings.concurrentLoops, offset + 100))
    }
    const oneAtATime = combine(modes.one)
    const shared = combine(modes.shared)
    const sharedNoPrefix = combine(modes.plain)
    return {
      benchmark: 'engine',
      backend: backend.name,
      model: { ...modelConfig, parameters: parameterCount(modelConfig) },
      settings,
      one_at_a_time: oneAtATime,
      continuous_batching_64: shared,
      continuous_batching_64_without_prefix_cache: sharedNoPrefix,
      speedup_tokens_per_s: Number((shared.tokens_per_s / oneAtATime.tokens_per_s).toFixed(2)),
      speedup_without_prefix_cache: Number(
        (sharedNoPrefix.tokens_per_s / oneAtATime.tokens_per_s).toFixed(2),
      ),
    }
  } finally {
    await engine.stop()
    await plainEngine.stop()
    await system.stop()
    await loopSide.close()
    await engineSide.close()
    await server?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}
