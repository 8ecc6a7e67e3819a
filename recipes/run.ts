import { existsSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import {
  appendRunLog,
  checkRoleThreads,
  connectNats,
  type EvalInstance,
  type EvalPaired,
  type EvalResult,
  type Evaluation,
  evaluatePolicy,
  finalEvalName,
  findNatsServer,
  InProcessTransport,
  type NatsServer,
  type NatsServerSupervision,
  natsServerEventLine,
  natsServerOnPath,
  onLearnerAxis,
  type ProcessEvent,
  ProcessRestartReport,
  ProcessSupervisor,
  pairedDifference,
  pairedDifferenceLine,
  processEventLine,
  RoleGaveUpError,
  RUN_MAX_STEPS,
  type RunDir,
  readLatestCheckpoint,
  recordRunTransport,
  roleThreadsEnv,
  type SupervisedProcess,
  startInProcessNodes,
  startMetricsSink,
  startNatsServer,
  startNodeProcesses,
  superviseNatsServer,
  type Transport,
  writeEvalResult,
} from '../actors/index.ts'
import { CheckpointFile, chooseBackend, disposeTransformer, loadCheckpointPolicy } from '../gpu/index.ts'
import { nodeConfigOf } from './node-config.ts'
import {
  evalRowLine,
  evaluateInProcess,
  heldOutSettings,
  periodicEvalName,
  startPeriodicEvaluation,
} from './periodic-evaluation.ts'
import type { ResolvedRecipe } from './task-catalog.ts'

/** How `triad run` asks for a run to be started. */
export interface StartRunOptions {
  /**
   * NATS server URL(s) to join; absent: the embedded default, a local nats-server when one is on
   * PATH, else one process on the in-process transport.
   */
  nats?: string
  /** Run in one process on the in-process transport even when nats-server is on PATH (not with `nats`). */
  inProcess?: boolean
  /** True when `runDir` is an existing run being continued. */
  resume: boolean
  /** Where progress lines go (default stdout). */
  log?: (line: string) => void
  /** Called with every metrics line as it is written (the live view). */
  onMetrics?: (line: { role: string; step: number; values: Record<string, number> }) => void
  /**
   * Stop after the cold start (the run's tokenizer, the policy's SFT and the reward model's cold
   * start, each kept in the run directory) and evaluate the SFT checkpoint into
   * `eval/step-000000.json`: no RL step is taken and the budget does not apply. A later run of the
   * directory (`--resume`) starts RL from there. `triad ablate` prepares the SFT its variants share
   * this way.
   */
  sftOnly?: boolean
}

/** What a finished run reports. */
export interface RunSummary {
  steps: number
  /** Restarts of each node process. */
  restarts: Record<string, number>
  /** Eval file written at the end, if any. */
  evalFile?: string
  metricsLines: number
  /**
   * The signal that stopped the run (SIGINT, SIGTERM), when one did: `triad run` exits 128 + its
   * number (130, 143) after the same clean stop, so a script sees the run as interrupted.
   */
  signal?: 'SIGINT' | 'SIGTERM'
}

/** The line `triad run` prints when it runs in one process, and why. */
export function inProcessLine(why: 'asked' | 'no-nats-server', offPath?: string): string {
  const what =
    'running learner and rollout in one process on the in-process transport (triad monitor cannot attach)'
  if (why === 'asked') return `--in-process: ${what}`
  const found = offPath ? ` (${offPath} exists: add ${dirname(offPath)} to PATH to use it)` : ''
  return `nats-server not found on PATH${found}: ${what}; install nats-server (apt-get install nats-server) to spread roles over processes and machines`
}

/** Learner steps of a run whose budget gives only a time limit: in effect none. */
export const UNBOUNDED_STEPS = 1_000_000

/**
 * The run's stop conditions from `budget`: the learner steps (`budget.maxSteps`, else
 * `UNBOUNDED_STEPS`) and the wall-clock limit in ms (`budget.maxMinutes`; absent: none).
 */
export function runBudgetOf(recipe: Pick<ResolvedRecipe, 'budget'>): { maxSteps: number; maxMs?: number } {
  const { maxSteps, maxMinutes } = recipe.budget
  return { maxSteps: maxSteps ?? UNBOUNDED_STEPS, ...(maxMinutes ? { maxMs: maxMinutes * 60_000 } : {}) }
}

/**
 * Runs a recipe end to end in `runDir`: a learner (cold-start SFT, then GRPO-TCR) and a rollout
 * side (environments, fresh and stale engines, agent loops); every metric goes to `metrics.jsonl`.
 * Where the roles run:
 * - `nats` given: two processes under a process supervisor, joining that server;
 * - else, nats-server on PATH: the same, on an embedded nats-server (free ports, monitoring on)
 *   with its JetStream store in the run directory;
 * - else (or `inProcess`): both roles in this process on the in-process transport, with one line
 *   that says so and why.
 * Every `evaluation.every` learner steps the latest checkpoint is evaluated on the held-out split
 * in a separate process (`startPeriodicEvaluation`). Stops at the step budget or the time budget,
 * then evaluates the final and the SFT checkpoints on the held-out split.
 * @throws NatsConnectError for a `nats` URL that does not answer; RoleFailedError when a role
 *   fails in one process (nothing can restart it there); RoleGaveUpError when the supervisor gave
 *   up on a role's process (the other roles are stopped first; nothing of the run is deleted).
 */
export async function startRun(
  recipe: ResolvedRecipe,
  dir: RunDir,
  options: StartRunOptions,
): Promise<RunSummary> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`))
  // --sft-only: no RL step, and no time budget (the cold start is done whole).
  const budget = runBudgetOf(recipe)
  const maxSteps = options.sftOnly ? 0 : budget.maxSteps
  const budgetMs = options.sftOnly ? undefined : budget.maxMs
  const config = nodeConfigOf(recipe, dir, maxSteps)
  // Both roles run on this machine, whatever the layout: a count above its cores ends it here.
  checkRoleThreads(config.threads)
  let server: NatsServer | undefined
  let serverSupervision: NatsServerSupervision | undefined
  let url = options.nats
  const binary = url || options.inProcess ? undefined : natsServerOnPath()
  if (binary) {
    server = await startNatsServer({ binary, storeDir: join(dir.path, 'nats') })
    url = server.url
    log(
      `embedded nats-server at ${url}, monitoring ${server.monitorUrl}, JetStream store ${join(dir.path, 'nats')}`,
    )
    // Supervised like the roles: restarted on its port and store when it dies; a server that
    // cannot come back ends the run.
    const port = server.port
    serverSupervision = superviseNatsServer(server, (e) => {
      log(natsServerEventLine(e, port))
      void appendRunLog(dir, 'run', { event: `nats-server.${e.type}`, time: Date.now(), port, ...e })
    })
  }
  let transport: Transport
  if (url) {
    transport = await connectNats({ servers: url, run: dir.id, role: 'run', id: String(process.pid) })
    await recordRunTransport(dir, { transport: 'nats', url, monitor: server?.monitorUrl })
  } else {
    const reason = inProcessLine(options.inProcess ? 'asked' : 'no-nats-server', findNatsServer())
    log(reason)
    transport = new InProcessTransport()
    await recordRunTransport(dir, { transport: 'in-process', reason })
  }
  const configFile = join(dir.path, 'node-config.json')
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)

  let metricsLines = 0
  let step = 0
  const sink = startMetricsSink(transport, {
    run: dir.id,
    file: dir.metricsFile,
    tensorboardDir: dir.tensorboardDir,
    onTensorBoardError: (err) => log(`TensorBoard event files stopped: ${err.message}`),
    onWrite: (line) => {
      metricsLines++
      if (line.role === 'learner' && onLearnerAxis(line)) step = Math.max(step, line.step)
      options.onMetrics?.(line)
    },
  })
  // Restarts of the learner and rollout processes go out as metrics (the restarts column), with
  // the step budget (the end of the progress bar of a triad monitor elsewhere).
  const restarts = url
    ? new ProcessRestartReport(transport, {
        run: dir.id,
        id: String(process.pid),
        step: () => step,
        names: ['learner', 'rollout'],
        values: recipe.budget.maxSteps === undefined ? {} : { [RUN_MAX_STEPS]: recipe.budget.maxSteps },
      })
    : undefined
  // Before the nodes: an evaluation a stopped run left unfinished starts from its checkpoint
  // before the learner can prune it.
  const evaluations = options.sftOnly ? undefined : startPeriodicEvaluation(recipe, dir, maxSteps, log)
  const nodes = url
    ? startProcesses(dir, configFile, url, log, (e) => restarts?.onEvent(e), config)
    : startInProcess(transport as InProcessTransport, config, dir, log)

  let timer: NodeJS.Timeout | undefined
  const outOfTime = new Promise<'time'>((resolve) => {
    if (budgetMs) timer = setTimeout(() => resolve('time'), budgetMs)
  })
  // The first SIGINT or SIGTERM starts the stop; the handlers stay until the stop is done, so a
  // second signal (Ctrl-C twice, or a supervisor's SIGTERM after the terminal's SIGINT) cannot end
  // this process by the default action in the middle of it.
  let signal: 'SIGINT' | 'SIGTERM' | undefined
  let onSignal: (s: 'SIGINT' | 'SIGTERM') => void = () => {}
  const interrupted = new Promise<'signal'>((resolve) => {
    onSignal = (s) => {
      signal ??= s
      resolve('signal')
    }
  })
  const onSigint = () => onSignal('SIGINT')
  const onSigterm = () => onSignal('SIGTERM')
  process.on('SIGINT', onSigint)
  process.on('SIGTERM', onSigterm)
  let failure: unknown
  const fail = (err: unknown) => {
    failure = err
    return 'failed' as const
  }
  const finished = nodes.finished.then(() => 'steps' as const, fail)
  const serverGone = serverSupervision ? serverSupervision.failed.catch(fail) : new Promise<never>(() => {})
  const why = await Promise.race([finished, outOfTime, interrupted, serverGone])
  clearTimeout(timer)
  const reasons = {
    steps: options.sftOnly ? 'the cold start is done (--sft-only)' : `${maxSteps} steps done`,
    time: 'time budget',
    signal: 'interrupted',
  }
  log(`stopping (${why === 'failed' ? String((failure as Error)?.message ?? failure) : reasons[why]})`)
  // An evaluation in progress finishes (its step belongs in the report) unless the run was stopped;
  // so do the pending ones, unless a signal comes while they run: then they are left in
  // eval/.step-N-checkpoint/ for the resume, which evaluates them first.
  const wait = why === 'steps' || why === 'time'
  const evaluating = evaluations?.stop({ wait })
  if (wait && evaluations)
    onSignal = (s) => {
      if (signal) return
      signal = s
      log('interrupted: the pending periodic evaluations are left for the resume')
      void evaluations.stop({ wait: false })
    }
  // The roles first (the learner checkpoints and acknowledges its groups on the server), the
  // server last; it is still restarted if it dies while the roles stop.
  await nodes.stop()
  restarts?.stop({ finished: why === 'steps' || why === 'time' })
  await sink.stop()
  await transport.close()
  serverSupervision?.stop()
  await server?.stop()
  await evaluating
  process.off('SIGINT', onSigint)
  process.off('SIGTERM', onSigterm)

  const summary: RunSummary = { steps: step, restarts: nodes.restarts(), metricsLines }
  if (signal) summary.signal = signal
  if (why !== 'signal' && why !== 'failed' && !signal && recipe.evaluation.k > 0)
    summary.evalFile = options.sftOnly
      ? (await evaluateSft(recipe, dir, log)).file
      : await evaluateRun(recipe, dir, log)
  await appendRunLog(dir, 'run', { event: 'stop', time: Date.now(), reason: why, ...summary })
  if (why === 'failed') throw failure
  return summary
}

/** The roles of a run wherever they run: `finished` when the learner's work is done. */
interface RunNodes {
  /**
   * Resolves when the learner reached its step budget; rejects when a role failed for good
   * (`RoleGaveUpError` for a process the supervisor gave up on).
   */
  finished: Promise<void>
  /** Restarts of each role's process (none in one process). */
  restarts(): Record<string, number>
  stop(): Promise<void>
}

/**
 * The learner and rollout processes under a process supervisor, joining the NATS server at `url`.
 * The run fails (`finished` rejects with `RoleGaveUpError`) as soon as the supervisor gives up on
 * either: nothing would restart it, and the other would wait for it forever.
 */
function startProcesses(
  dir: RunDir,
  configFile: string,
  url: string,
  log: (line: string) => void,
  onEvent: (e: ProcessEvent) => void,
  config: ReturnType<typeof nodeConfigOf>,
): RunNodes {
  const supervisor = new ProcessSupervisor()
  let gaveUp: (err: RoleGaveUpError) => void = () => {}
  const failed = new Promise<never>((_, reject) => {
    gaveUp = reject
  })
  supervisor.on((e) => {
    void appendRunLog(dir, 'run', { event: `process.${e.type}`, time: Date.now(), ...e })
    const line = processEventLine(e)
    if (line) log(line)
    onEvent(e)
    if (e.type === 'gave-up') gaveUp(new RoleGaveUpError(e.name, e.reason, e.error, e.restarts, e.logFile))
  })
  const { learner, rollout } = startNodeProcesses(supervisor, ['learner', 'rollout'], {
    configFile,
    nats: url,
    logsDir: dir.logsDir,
    // two processes on this machine: each role left auto gets its share of the cores
    env: roleThreadsEnv(config.threads),
  }) as Record<'learner' | 'rollout', SupervisedProcess>
  log(`learner pid ${learner.pid()}, rollout pid ${rollout.pid()}; logs in ${dir.logsDir}`)
  return {
    finished: Promise.race([learner.finished, failed]),
    restarts: () => ({ learner: learner.restarts(), rollout: rollout.restarts() }),
    stop: () => supervisor.stop(),
  }
}

/** The learner and rollout roles in this process, on the in-process transport. */
function startInProcess(
  transport: InProcessTransport,
  config: ReturnType<typeof nodeConfigOf>,
  dir: RunDir,
  log: (line: string) => void,
): RunNodes {
  const nodes = startInProcessNodes(transport, config, {
    logsDir: dir.logsDir,
    onEscalate: (path, error) => log(`${path} failed past its restart limit: ${String(error)}`),
  })
  log(`learner and rollout in this process (pid ${process.pid}); logs in ${dir.logsDir}`)
  return { finished: nodes.finished, restarts: () => ({ learner: 0, rollout: 0 }), stop: () => nodes.stop() }
}

/**
 * Evaluates the SFT checkpoint (`checkpoints/sft/`) on the held-out split in a `triad eval` process
 * (`eval/step-000000.json`; one kept from an earlier attempt of a resumed run, or put there by
 * `triad ablate`, is read instead). A failure is logged, not thrown.
 * @returns the file and its contents; both undefined when the run has no SFT checkpoint or its
 *   evaluation failed.
 */
async function evaluateSft(
  recipe: ResolvedRecipe,
  dir: RunDir,
  log: (line: string) => void,
): Promise<{ file?: string; result?: EvalResult }> {
  const sftDir = join(dir.checkpointsDir, 'sft')
  if (!existsSync(join(sftDir, CheckpointFile.Weights)) && !existsSync(join(sftDir, CheckpointFile.Adapters)))
    return {}
  try {
    const result = await evaluateInProcess(
      recipe,
      dir,
      { dir: sftDir, version: 0 },
      { label: 'sft', title: 'held-out evaluation of the SFT checkpoint (step 0)' },
      log,
    )
    return result ? { file: join(dir.evalDir, `${periodicEvalName(0)}.json`), result } : {}
  } catch (err) {
    log(`evaluation of the SFT checkpoint failed: ${(err as Error).message}`)
    return {}
  }
}

/**
 * Evaluates the latest learner checkpoint and the SFT checkpoint on the held-out split, at once:
 * the SFT checkpoint in a `triad eval` process (`eval/step-000000.json`, kept from an earlier
 * attempt of a resumed run), the latest here, both with the run's held-out settings
 * (`heldOutSettings`: the same instances and the same sampling seeds). Both sets of rows and of
 * per-instance results go into `eval/final-<time>.json`, with the paired difference of the latest
 * minus the SFT checkpoint per task and for the mean (`pairedDifference`), which is also logged.
 */
async function evaluateRun(
  recipe: ResolvedRecipe,
  dir: RunDir,
  log: (line: string) => void,
): Promise<string | undefined> {
  await chooseBackend({
    backend: recipe.model.backend === 'auto' ? undefined : recipe.model.backend,
    log: () => {},
  })
  const settings = heldOutSettings(recipe)
  const latest = readLatestCheckpoint(dir.checkpointsDir)
  const sft = evaluateSft(recipe, dir, log).then((e) => e.result)
  const rows: Record<string, string | number>[] = []
  const instances: EvalInstance[] = []
  let final: Evaluation | undefined
  const name = latest ? `step-${latest.version}` : undefined
  if (latest && name) {
    try {
      const loaded = await loadCheckpointPolicy(latest.dir)
      log(
        `evaluating ${name}: ${recipe.evaluation.instancesPerTask} held-out instances x k=${recipe.evaluation.k} per task`,
      )
      final = await evaluatePolicy(loaded.model, loaded.format, settings)
      disposeTransformer(loaded.model)
      for (const r of final.rows) {
        rows.push({ checkpoint: name, ...r })
        log(evalRowLine(name, r))
      }
      instances.push(...final.instances.map((r) => ({ checkpoint: name, ...r })))
    } catch (err) {
      log(`evaluation of ${name} failed: ${(err as Error).message}`)
    }
  }
  const base = await sft
  rows.unshift(
    ...(base?.rows ?? []).map((r) => ({ checkpoint: 'sft', ...r }) as Record<string, string | number>),
  )
  instances.unshift(...(base?.instances ?? []).map((r) => ({ ...r, checkpoint: 'sft' })))
  if (rows.length === 0) return undefined
  // The paired difference needs both checkpoints' instances, played with the same seed.
  let paired: EvalPaired[] | undefined
  if (final && name && base?.instances?.length && base.seed === settings.seed) {
    try {
      paired = pairedDifference(base.instances, final.instances).map((d) => ({ a: 'sft', b: name, ...d }))
      for (const d of paired) log(pairedDifferenceLine(`${name} - sft`, settings.k, d))
    } catch (err) {
      log(`no paired difference of ${name} and the SFT checkpoint: ${(err as Error).message}`)
    }
  }
  return writeEvalResult(dir, finalEvalName(Date.now()), {
    title: 'held-out evaluation: SFT checkpoint vs final RL checkpoint',
    step: latest?.version,
    k: recipe.evaluation.k,
    time: Date.now(),
    seed: settings.seed,
    instances,
    ...(paired ? { paired } : {}),
    rows,
  })
}
