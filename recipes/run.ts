import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  appendRunLog,
  connectNats,
  evaluatePolicy,
  findNatsServer,
  type NatsServer,
  type NatsTransport,
  ProcessSupervisor,
  processEventLine,
  type RunDir,
  readLatestCheckpoint,
  type SupervisedProcess,
  startMetricsSink,
  startNatsServer,
  startNodeProcesses,
  writeEvalResult,
} from '../actors/index.ts'
import { chooseBackend, loadCheckpoint } from '../gpu/index.ts'
import { RunNotAvailableError } from './errors.ts'
import { nodeConfigOf } from './node-config.ts'
import type { ResolvedRecipe } from './task-catalog.ts'

/** How `triad run` asks for a run to be started. */
export interface StartRunOptions {
  /** NATS server URL(s) to join; absent: the embedded default (a local nats-server). */
  nats?: string
  /** True when `runDir` is an existing run being continued. */
  resume: boolean
  /** Where progress lines go (default stdout). */
  log?: (line: string) => void
  /** Called with every metrics line as it is written (the live view). */
  onMetrics?: (line: { role: string; step: number; values: Record<string, number> }) => void
}

/** What a finished run reports. */
export interface RunSummary {
  steps: number
  /** Restarts of each node process. */
  restarts: Record<string, number>
  /** Eval file written at the end, if any. */
  evalFile?: string
  metricsLines: number
}

/**
 * Runs a recipe end to end in `runDir`: a learner process (cold-start SFT, then GRPO-TCR) and a
 * rollout process (environments, fresh and stale engines, agent loops) under a process supervisor,
 * talking over NATS (an embedded nats-server with its JetStream store in the run directory unless
 * `nats` is given); every metric goes to `metrics.jsonl`. Stops at the step budget or the time
 * budget, then evaluates the final and the SFT checkpoints on the held-out split.
 * @throws RunNotAvailableError when no NATS server can be had; NatsConnectError for a `nats` URL
 *   that does not answer.
 */
export async function startRun(
  recipe: ResolvedRecipe,
  dir: RunDir,
  options: StartRunOptions,
): Promise<RunSummary> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`))
  const maxSteps = recipe.budget.maxSteps ?? 1_000_000
  const config = nodeConfigOf(recipe, dir, maxSteps)
  let server: NatsServer | undefined
  let url = options.nats
  if (!url) {
    if (!findNatsServer())
      throw new RunNotAvailableError(
        'no NATS server: install nats-server (apt-get install nats-server) or pass --nats URL of a running one',
      )
    server = await startNatsServer({ storeDir: join(dir.path, 'nats') })
    url = server.url
    log(
      `embedded nats-server at ${url}, monitoring ${server.monitorUrl}, JetStream store ${join(dir.path, 'nats')}`,
    )
  }
  const transport: NatsTransport = await connectNats({
    servers: url,
    run: dir.id,
    role: 'run',
    id: String(process.pid),
  })
  const configFile = join(dir.path, 'node-config.json')
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)

  let metricsLines = 0
  let step = 0
  const sink = startMetricsSink(transport, {
    run: dir.id,
    file: dir.metricsFile,
    onWrite: (line) => {
      metricsLines++
      if (line.role === 'learner') step = Math.max(step, line.step)
      options.onMetrics?.(line)
    },
  })
  const supervisor = new ProcessSupervisor()
  supervisor.on((e) => {
    void appendRunLog(dir, 'run', { event: `process.${e.type}`, time: Date.now(), ...e })
    const line = processEventLine(e)
    if (line) log(line)
  })
  const { learner, rollout } = startNodeProcesses(supervisor, ['learner', 'rollout'], {
    configFile,
    nats: url,
    logsDir: dir.logsDir,
  }) as Record<'learner' | 'rollout', SupervisedProcess>
  log(`learner pid ${learner.pid()}, rollout pid ${rollout.pid()}; logs in ${dir.logsDir}`)

  const budgetMs = recipe.budget.maxMinutes ? recipe.budget.maxMinutes * 60_000 : undefined
  let timer: NodeJS.Timeout | undefined
  const outOfTime = new Promise<'time'>((resolve) => {
    if (budgetMs) timer = setTimeout(() => resolve('time'), budgetMs)
  })
  const interrupted = new Promise<'signal'>((resolve) => {
    process.once('SIGINT', () => resolve('signal'))
    process.once('SIGTERM', () => resolve('signal'))
  })
  const why = await Promise.race([learner.finished.then(() => 'steps' as const), outOfTime, interrupted])
  clearTimeout(timer)
  log(
    `stopping (${why === 'steps' ? `${maxSteps} steps done` : why === 'time' ? 'time budget' : 'interrupted'})`,
  )
  await supervisor.stop()
  await sink.stop()
  await transport.close()
  await server?.stop()

  const summary: RunSummary = {
    steps: step,
    restarts: { learner: learner.restarts(), rollout: rollout.restarts() },
    metricsLines,
  }
  if (why !== 'signal' && recipe.evaluation.k > 0) summary.evalFile = await evaluateRun(recipe, dir, log)
  await appendRunLog(dir, 'run', { event: 'stop', time: Date.now(), reason: why, ...summary })
  return summary
}

/** Evaluates the latest learner checkpoint and the SFT checkpoint on the held-out split. */
async function evaluateRun(
  recipe: ResolvedRecipe,
  dir: RunDir,
  log: (line: string) => void,
): Promise<string | undefined> {
  await chooseBackend({
    backend: recipe.model.backend === 'auto' ? undefined : recipe.model.backend,
    log: () => {},
  })
  const latest = readLatestCheckpoint(dir.checkpointsDir)
  const candidates = [
    { name: 'sft', path: join(dir.checkpointsDir, 'sft') },
    ...(latest ? [{ name: `step-${latest.version}`, path: latest.dir }] : []),
  ]
  const rows: Record<string, string | number>[] = []
  for (const c of candidates) {
    let loaded: Awaited<ReturnType<typeof loadCheckpoint>>
    try {
      loaded = await loadCheckpoint(c.path)
    } catch {
      continue
    }
    log(
      `evaluating ${c.name}: ${recipe.evaluation.instancesPerTask} held-out instances x k=${recipe.evaluation.k} per task`,
    )
    const result = await evaluatePolicy(loaded.model, loaded.tokenizer, {
      tasks: recipe.tasks.map((t) => ({ name: t.name, difficulty: t.difficulty.start })),
      k: recipe.evaluation.k,
      instances: recipe.evaluation.instancesPerTask,
      maxNewTokens: recipe.pipeline.maxNewTokens,
      temperature: recipe.pipeline.temperature,
      seed: recipe.seed + 4242,
    })
    for (const r of result) {
      rows.push({ checkpoint: c.name, ...r })
      log(
        `  ${c.name} ${r.task}: avg@${r.k} ${r.avg_at_k.toFixed(3)} ± ${r.avg_at_k_se.toFixed(3)}, pass@${r.k} ${r.pass_at_k.toFixed(3)} ± ${r.pass_at_k_se.toFixed(3)}`,
      )
    }
  }
  if (rows.length === 0) return undefined
  return writeEvalResult(dir, `final-${Date.now()}`, {
    title: 'held-out evaluation: SFT checkpoint vs final RL checkpoint',
    step: latest?.version,
    k: recipe.evaluation.k,
    time: Date.now(),
    rows,
  })
}
