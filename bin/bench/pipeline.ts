/**
 * `triad bench pipeline`: the asynchronous pipeline against the synchronous baseline, same
 * config, same machine, one after the other in this run. The task mix has episodes of very
 * different lengths (calc: one short turn; maze: several long turns), where a synchronous batch
 * waits for its longest episode and the learner idles while the batch is generated.
 *
 * Reported per mode: trajectories trained per second, learner steps, the learner's busy fraction
 * (time in steps / wall time), generated tokens per episode per task, and the async/sync ratio.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  connectNats,
  type NodeConfig,
  ProcessSupervisor,
  type RunDir,
  startNatsServer,
  startNodeProcesses,
} from '../../actors/index.ts'
import { MessageRegistry, MetricsReport } from '../../protocols/index.ts'
import { builtinTaskCatalog, defineRecipe, nodeConfigOf, resolveTasks } from '../../recipes/index.ts'

type Line = { role: string; step: number; values: Record<string, number> }

/**
 * The bench's node config: `nodeConfigOf` of its recipe (2 layers of width 64, calc and maze, no
 * SFT, groups of 4, 4 to 16 groups buffered), without the triad block (every part off) and the
 * checkpoint pruning. What no recipe can say is set on the config after: calc's and maze's own
 * turn and token limits (a recipe gives one pair for every task), and at most 8 groups per learner
 * step (a recipe's learner takes up to `bufferGroups`).
 */
function configFor(mode: 'async' | 'sync', run: string, runDir: string): NodeConfig {
  const recipe = defineRecipe({
    name: 'bench-pipeline',
    seed: 11,
    tasks: [{ name: 'calc' }, { name: 'maze' }],
    model: { layers: 2, width: 64, heads: 4, contextLength: 512, merges: 0 },
    sft: { expertTrajectoriesPerTask: 0 },
    rl: { groupSize: 4, lr: 1e-4, overlong: { enabled: false } },
    pipeline: {
      mode,
      freshEngines: 1,
      staleEngines: 0,
      rho: 0,
      staleEvery: 1,
      stalenessBound: 8,
      minBatchGroups: 4,
      bufferGroups: 16,
      concurrency: 16,
      maxTurns: 4,
      maxNewTokens: 64,
    },
    evaluation: { every: 0 },
    checkpoints: { every: 1 },
  })
  const { triad: _triad, ...config } = nodeConfigOf(
    resolveTasks(recipe, builtinTaskCatalog()),
    { id: run, path: runDir } as RunDir,
    1_000_000,
  )
  const { keepCheckpoints: _keep, ...pipeline } = config.pipeline
  const limits: Record<string, { maxTurns: number; maxNewTokens: number }> = {
    calc: { maxTurns: 1, maxNewTokens: 12 },
    maze: { maxTurns: 4, maxNewTokens: 72 },
  }
  return {
    ...config,
    tasks: config.tasks.map((t) => ({ ...t, ...limits[t.name] })),
    pipeline: { ...pipeline, maxBatchGroups: 8 },
  }
}

async function measure(mode: 'async' | 'sync', url: string, seconds: number) {
  const runDir = mkdtempSync(join(tmpdir(), `triad-bench-${mode}-`))
  const run = `bench-${mode}-${process.pid}`
  const configFile = join(runDir, 'node-config.json')
  writeFileSync(configFile, JSON.stringify(configFor(mode, run, runDir)))
  const watcher = await connectNats({ servers: url, run, role: 'bench', id: '0' })
  const lines: Line[] = []
  let started: number | undefined
  watcher.subscribe(`triad.${run}.metrics.>`, {
    accepts: new MessageRegistry([MetricsReport]),
    handler: (m) => {
      const line = m.payload as Line
      // The clock starts at the first learner step: both modes pay the same start-up before it.
      if (line.role === 'learner' && started === undefined) started = performance.now()
      lines.push(line)
    },
  })
  const supervisor = new ProcessSupervisor()
  startNodeProcesses(supervisor, ['learner', 'rollout'], { configFile, nats: url, logsDir: runDir })
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (started !== undefined && performance.now() - started >= seconds * 1000) {
        clearInterval(check)
        resolve()
      }
    }, 200)
  })
  const wallS = (performance.now() - started!) / 1000
  await supervisor.stop()
  await watcher.close()
  const learner = lines.filter((l) => l.role === 'learner' && l.values['learner/version'] !== undefined)
  const trajectories = learner.reduce((a, l) => a + (l.values['batch/trajectories'] ?? 0), 0)
  const last = learner.at(-1)
  const perTask: Record<string, { episodes: number; tokensPerEpisode: number }> = {}
  for (const l of lines.filter((x) => x.role === 'rollout'))
    for (const [k, v] of Object.entries(l.values)) {
      const m = /^rollout\/episodes\/(.+)$/.exec(k)
      if (!m || !v) continue
      perTask[m[1]!] ??= { episodes: 0, tokensPerEpisode: 0 }
      const t = perTask[m[1]!]!
      const mean = l.values[`rollout/generated_tokens_mean/${m[1]}`] ?? 0
      t.tokensPerEpisode = (t.tokensPerEpisode * t.episodes + mean * v) / (t.episodes + v)
      t.episodes += v
    }
  rmSync(runDir, { recursive: true, force: true })
  return {
    mode,
    seconds: Number(wallS.toFixed(1)),
    learnerSteps: last?.values['learner/version'] ?? 0,
    trajectoriesTrained: trajectories,
    trajectoriesPerSecond: Number((trajectories / wallS).toFixed(3)),
    learnerBusyFraction: Number((last?.values['pipeline/learner_busy_frac'] ?? 0).toFixed(3)),
    stalenessMean: last?.values['pipeline/staleness_mean'] ?? 0,
    perTask,
  }
}

export async function run(options: { nats?: string; quick?: boolean; seconds?: string }) {
  const seconds = Number(options.seconds ?? (options.quick ? 20 : 90))
  const storeDir = mkdtempSync(join(tmpdir(), 'triad-bench-nats-'))
  const server = options.nats ? undefined : await startNatsServer({ storeDir })
  const url = options.nats ?? server!.url
  try {
    const sync = await measure('sync', url, seconds)
    const async = await measure('async', url, seconds)
    const lengths = Object.values(async.perTask).map((t) => t.tokensPerEpisode)
    return {
      bench: 'pipeline',
      config: {
        ...configFor('async', 'x', '.').pipeline,
        tasks: configFor('async', 'x', '.').tasks,
        model: configFor('async', 'x', '.').model,
        secondsPerMode: seconds,
      },
      episodeLengthRatio:
        lengths.length > 1
          ? Number((Math.max(...lengths) / Math.max(1, Math.min(...lengths))).toFixed(2))
          : null,
      sync,
      async,
      asyncOverSync: Number(
        (async.trajectoriesPerSecond / Math.max(1e-9, sync.trajectoriesPerSecond)).toFixed(2),
      ),
      target: { asyncOverSync: 1.8 },
    }
  } finally {
    await server?.stop()
    rmSync(storeDir, { recursive: true, force: true })
  }
}
