import { existsSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import {
  appendRunLog,
  asWriteError,
  auditGroups,
  type Chaos,
  type ChaosKill,
  type ChaosTarget,
  ChaosUnavailableError,
  chaosKillLine,
  chaosReportLines,
  chaosSupervision,
  checkRoleThreads,
  connectNats,
  type EvalInstance,
  type EvalPaired,
  type EvalResult,
  type Evaluation,
  evaluatePolicy,
  finalEvalName,
  findNatsServer,
  type GroupAudit,
  groupAuditLine,
  InProcessTransport,
  isWriteError,
  NATS_SERVER_SUPERVISION,
  type NatsServer,
  type NatsServerSupervision,
  NatsTransport,
  natsServerEventLine,
  natsServerOnPath,
  onLearnerAxis,
  PROCESS_SUPERVISION,
  type ProcessEvent,
  ProcessRestartReport,
  ProcessSupervisor,
  pairedDifference,
  pairedDifferenceLine,
  processEventLine,
  RoleGaveUpError,
  RUN_MAX_STEPS,
  type RunDir,
  RunWriteError,
  readLatestCheckpoint,
  recordRunTransport,
  roleThreadsEnv,
  type SupervisedProcess,
  type SupervisionPolicy,
  startChaos,
  startInProcessNodes,
  startMetricsSink,
  startNatsServer,
  startNodeProcesses,
  streamManager,
  superviseNatsServer,
  type Transport,
  trajectoryStreamName,
  writeEvalResult,
} from '../../actors/index.ts'
import { CheckpointFile, chooseBackend, disposeTransformer, loadCheckpointPolicy } from '../../gpu/index.ts'
import type { ResolvedRecipe } from '../../recipes/index.ts'
import { nodeConfigOf } from '../../recipes/index.ts'
import {
  evalRowLine,
  evaluateInProcess,
  heldOutSettings,
  periodicEvalName,
  startPeriodicEvaluation,
} from './periodic-evaluation.ts'

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
  /**
   * Chaos mode (`--chaos EVERY`): every `everyS` seconds one of the learner, the rollout and the
   * embedded nats-server, picked by a schedule seeded with `seed`, gets SIGKILL, through the whole
   * run (`startChaos`); the end prints the kills, the restarts and the group audit. Needs role
   * processes (not `inProcess`).
   */
  chaos?: { everyS: number; seed: number }
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
  /** With `chaos`: the kills made and the group audit at the end (absent when it could not be read). */
  chaos?: { kills: ChaosKill[]; audit?: GroupAudit }
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
  // The stop signals are taken from the start (the server's start, the cold start included): the
  // first SIGINT or SIGTERM starts the stop; the handlers stay until this function returns, the
  // final evaluation included, so a second signal (Ctrl-C twice, or a supervisor's SIGTERM after the
  // terminal's SIGINT) cannot end this process by the default action in the middle of the stop.
  let signal: 'SIGINT' | 'SIGTERM' | undefined
  let interrupt: () => void = () => {}
  const interrupted = new Promise<'signal'>((resolve) => {
    interrupt = () => resolve('signal')
  })
  /** What a signal does besides starting the stop, by phase (the drain of the evaluations). */
  let onLateSignal: (s: 'SIGINT' | 'SIGTERM') => void = () => {}
  const onSignal = (s: 'SIGINT' | 'SIGTERM') => {
    const first = signal === undefined
    signal ??= s
    interrupt()
    if (first) onLateSignal(s)
  }
  const onSigint = () => onSignal('SIGINT')
  const onSigterm = () => onSignal('SIGTERM')
  process.on('SIGINT', onSigint)
  process.on('SIGTERM', onSigterm)
  // A file of the run that cannot be written (a full disk), by whoever writes it, stops the run:
  // one line naming the writer and the path, then the same clean stop as a failed role, exit 1.
  let writeFailure: RunWriteError | undefined
  let failWrite: (err: RunWriteError) => void = () => {}
  const writeFailed = new Promise<'failed'>((resolve) => {
    failWrite = (err) => {
      writeFailure ??= err
      resolve('failed')
    }
  })
  const wrote =
    (role: string, path: string) =>
    (err: unknown): void => {
      const w = asWriteError(err, role, path)
      if (w instanceof RunWriteError) failWrite(w)
      else log(`${role}: cannot write ${path}: ${(w as Error)?.message ?? String(w)}`)
    }
  const runLog = join(dir.logsDir, 'run.jsonl')
  const record = (event: Record<string, unknown>) =>
    appendRunLog(dir, 'run', event).catch(wrote('run', runLog))
  // Chaos mode's kills get room in the restart limits (`chaosSupervision`).
  const supervision = (policy: SupervisionPolicy) =>
    options.chaos ? chaosSupervision(policy, options.chaos.everyS * 1000) : policy
  let server: NatsServer | undefined
  let serverSupervision: NatsServerSupervision | undefined
  let transport: Transport | undefined
  let chaos: Chaos | undefined
  try {
    let url = options.nats
    const binary = url || options.inProcess ? undefined : natsServerOnPath()
    if (binary) {
      const storeDir = join(dir.path, 'nats')
      server = await startNatsServer({ binary, storeDir })
      url = server.url
      log(`embedded nats-server at ${url}, monitoring ${server.monitorUrl}, JetStream store ${storeDir}`)
      // Supervised like the roles: restarted on its port and store when it dies; a server that
      // cannot come back ends the run.
      const port = server.port
      serverSupervision = superviseNatsServer(
        server,
        (e) => {
          log(natsServerEventLine(e, port))
          void record({ event: `nats-server.${e.type}`, time: Date.now(), port, ...e })
        },
        supervision(NATS_SERVER_SUPERVISION),
      )
      // A store on a full disk: the server disables JetStream, nothing can be published.
      server.onStoreError((line) =>
        failWrite(new RunWriteError('nats-server', storeDir, new Error(`${line} (ENOSPC)`))),
      )
    }
    if (url) {
      transport = await connectNats({ servers: url, run: dir.id, role: 'run', id: String(process.pid) })
      await recordRunTransport(dir, { transport: 'nats', url, monitor: server?.monitorUrl })
    } else {
      const reason = inProcessLine(options.inProcess ? 'asked' : 'no-nats-server', findNatsServer())
      log(reason)
      transport = new InProcessTransport()
      await recordRunTransport(dir, { transport: 'in-process', reason })
    }
    // Chaos mode kills role processes: one process has none (before anything starts).
    if (options.chaos && !url) throw new ChaosUnavailableError()
    const configFile = join(dir.path, 'node-config.json')
    try {
      writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)
    } catch (err) {
      throw asWriteError(err, 'run', configFile)
    }

    let metricsLines = 0
    let step = 0
    const sink = startMetricsSink(transport, {
      run: dir.id,
      file: dir.metricsFile,
      tensorboardDir: dir.tensorboardDir,
      onTensorBoardError: (err) =>
        isWriteError(err)
          ? wrote('run', dir.tensorboardDir)(err)
          : log(`TensorBoard event files stopped: ${err.message}`),
      onWriteError: wrote('run', dir.metricsFile),
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
    const evaluations = options.sftOnly
      ? undefined
      : startPeriodicEvaluation(recipe, dir, maxSteps, log, wrote('eval', dir.evalDir))
    const nodes = url
      ? startProcesses(dir, configFile, url, log, (e) => restarts?.onEvent(e), config, {
          wrote,
          record,
          policy: supervision(PROCESS_SUPERVISION),
        })
      : startInProcess(transport as InProcessTransport, config, dir, log, wrote)
    if (options.chaos) {
      const pids = nodes.pids ?? (() => ({ learner: undefined, rollout: undefined }))
      const targets: ChaosTarget[] = [
        { name: 'learner', pid: () => pids().learner },
        { name: 'rollout', pid: () => pids().rollout },
        ...(server ? [{ name: 'nats-server', pid: () => server?.pid() }] : []),
      ]
      log(
        `chaos: SIGKILL to one of ${targets.map((t) => t.name).join(', ')} every ${options.chaos.everyS} s (seed ${options.chaos.seed})`,
      )
      chaos = startChaos({
        everyMs: options.chaos.everyS * 1000,
        seed: options.chaos.seed,
        targets,
        onKill: (k) => {
          log(chaosKillLine(k))
          void record({ event: 'chaos.kill', time: Date.now(), ...k })
        },
      })
    }

    let timer: NodeJS.Timeout | undefined
    const outOfTime = new Promise<'time'>((resolve) => {
      if (budgetMs) timer = setTimeout(() => resolve('time'), budgetMs)
    })
    let failure: unknown
    const fail = (err: unknown) => {
      // A role that gave up on a write error is that write error (its role, its path).
      failure = asWriteError(err, (err as RoleGaveUpError)?.role ?? 'run', writePathIn(err) ?? dir.path)
      if (failure instanceof RunWriteError) writeFailure ??= failure
      return 'failed' as const
    }
    const finished = nodes.finished.then(() => 'steps' as const, fail)
    const serverGone = serverSupervision ? serverSupervision.failed.catch(fail) : new Promise<never>(() => {})
    const raced = await Promise.race([finished, outOfTime, interrupted, serverGone, writeFailed])
    const why = writeFailure ? 'failed' : raced
    if (writeFailure) failure = writeFailure
    clearTimeout(timer)
    const kills = chaos?.stop()
    const reasons = {
      steps: options.sftOnly ? 'the cold start is done (--sft-only)' : `${maxSteps} steps done`,
      time: 'time budget',
      signal: 'interrupted',
    }
    log(`stopping (${why === 'failed' ? String((failure as Error)?.message ?? failure) : reasons[why]})`)
    // An evaluation in progress finishes (its step belongs in the report) unless the run was
    // stopped; so do the pending ones, unless a signal comes while they run: then they are left in
    // eval/.step-N-checkpoint/ for the resume, which evaluates them first.
    const wait = why === 'steps' || why === 'time'
    const evaluating = evaluations?.stop({ wait })
    if (wait && evaluations)
      onLateSignal = () => {
        log('interrupted: the pending periodic evaluations are left for the resume')
        void evaluations.stop({ wait: false })
      }
    // The roles first (the learner checkpoints and acknowledges its groups on the server), the
    // server last; it is still restarted if it dies while the roles stop. Each part's stop is
    // awaited even when another's failed, so nothing is left running.
    const settle = async (what: string, stop: () => Promise<void> | void) => {
      try {
        await stop()
      } catch (err) {
        log(`${what} did not stop cleanly: ${(err as Error)?.message ?? String(err)}`)
      }
    }
    await settle('the roles', () => nodes.stop())
    restarts?.stop({ finished: wait })
    let audit: GroupAudit | undefined
    if (chaos && transport instanceof NatsTransport)
      try {
        audit = await auditGroups(
          dir.checkpointsDir,
          await streamManager(transport.nc),
          trajectoryStreamName(dir.id),
        )
      } catch (err) {
        log(`chaos: no group audit: ${(err as Error).message}`)
      }
    await settle('the metrics sink', () => sink.stop())
    await settle('the run connection', () => transport?.close())
    serverSupervision?.stop()
    await settle('nats-server', () => server?.stop())
    server = undefined
    await settle('the periodic evaluations', () => evaluating)

    const summary: RunSummary = { steps: step, restarts: nodes.restarts(), metricsLines }
    if (kills) {
      for (const line of chaosReportLines(kills, {
        ...nodes.restarts(),
        ...(serverSupervision ? { 'nats-server': serverSupervision.restarts() } : {}),
      }))
        log(line)
      if (audit) log(groupAuditLine(audit))
      summary.chaos = { kills: [...kills], ...(audit ? { audit } : {}) }
    }
    // The final evaluation, unless the run was stopped or failed; a signal or a write error while
    // it runs ends it (the resume evaluates again), after the same stop event.
    if (why !== 'signal' && why !== 'failed' && !signal && !writeFailure && recipe.evaluation.k > 0) {
      const evaluation = (
        options.sftOnly ? evaluateSft(recipe, dir, log).then((e) => e.file) : evaluateRun(recipe, dir, log)
      ).catch((err: unknown) => {
        wrote('run', dir.evalDir)(err)
        return undefined
      })
      const ended = await Promise.race([evaluation, interrupted, writeFailed])
      if (ended === 'signal') log('stopping (interrupted): the final evaluation is left for the resume')
      else if (ended !== 'failed' && !writeFailure) summary.evalFile = ended
    }
    if (signal) summary.signal = signal
    const reason = writeFailure ? 'failed' : summary.signal ? 'signal' : why
    if (writeFailure && why !== 'failed') log(`stopping (${writeFailure.message})`)
    await record({
      event: 'stop',
      time: Date.now(),
      reason,
      ...summary,
      ...(writeFailure || why === 'failed'
        ? { error: String((writeFailure ?? (failure as Error))?.message ?? failure) }
        : {}),
    })
    if (writeFailure) throw writeFailure
    if (why === 'failed') throw failure
    return summary
  } finally {
    chaos?.stop()
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
    // A start that failed half-way (a full disk, a port) leaves no server behind.
    serverSupervision?.stop()
    await server?.stop()
  }
}

/** The path a write error's message names (`cannot write /x:`, `open '/x'`, `/x: cannot write`), if any. */
function writePathIn(err: unknown): string | undefined {
  const text = (err as RoleGaveUpError)?.lastError ?? (err as Error)?.message ?? ''
  return (
    /cannot write (\/\S+?):/.exec(text)?.[1] ??
    /'(\/[^']+)'/.exec(text)?.[1] ??
    /(?:^|\s)(\/\S+?): cannot write/.exec(text)?.[1]
  )
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
  /** The pids of the role processes now (undefined while one is restarted); absent in one process. */
  pids?: () => { learner?: number; rollout?: number }
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
  run: {
    /** Reports a write error of `role` at `path` (it stops the run). */
    wrote: (role: string, path: string) => (err: unknown) => void
    /** Appends an event to `logs/run.jsonl`. */
    record: (event: Record<string, unknown>) => Promise<void>
    policy: SupervisionPolicy
  },
): RunNodes {
  const { wrote, record } = run
  const supervisor = new ProcessSupervisor(run.policy)
  let gaveUp: (err: RoleGaveUpError) => void = () => {}
  const failed = new Promise<never>((_, reject) => {
    gaveUp = reject
  })
  supervisor.on((e) => {
    void record({ event: `process.${e.type}`, time: Date.now(), ...e })
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
    onLogError: (role, file, err) => wrote(role, file)(err),
  }) as Record<'learner' | 'rollout', SupervisedProcess>
  log(`learner pid ${learner.pid()}, rollout pid ${rollout.pid()}; logs in ${dir.logsDir}`)
  return {
    finished: Promise.race([learner.finished, failed]),
    restarts: () => ({ learner: learner.restarts(), rollout: rollout.restarts() }),
    pids: () => ({ learner: learner.pid(), rollout: rollout.pid() }),
    stop: () => supervisor.stop(),
  }
}

/** The learner and rollout roles in this process, on the in-process transport. */
function startInProcess(
  transport: InProcessTransport,
  config: ReturnType<typeof nodeConfigOf>,
  dir: RunDir,
  log: (line: string) => void,
  wrote: (role: string, path: string) => (err: unknown) => void,
): RunNodes {
  const nodes = startInProcessNodes(transport, config, {
    logsDir: dir.logsDir,
    onLogError: (role, file, err) => wrote(role, file)(err),
    onEscalate: (path, error) => log(`${path} failed past its restart limit: ${String(error)}`),
  })
  log(`learner and rollout in this process (pid ${process.pid}); logs in ${dir.logsDir}`)
  return { finished: nodes.finished, restarts: () => ({ learner: 0, rollout: 0 }), stop: () => nodes.stop() }
}

/**
 * Evaluates the SFT checkpoint (`checkpoints/sft/`) on the held-out split in a `triad eval` process
 * (`eval/step-000000.json`; one kept from an earlier attempt of a resumed run, or put there by
 * `triad ablate`, is read instead). A failure is logged, not thrown, except a write error (a full
 * disk: `RunWriteError`), which is.
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
    // A full disk stops the run (`startRun`); any other failure leaves the run without the row.
    if (isWriteError(err)) throw err
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
  // Awaited below, after the latest's evaluation: a write error meanwhile is not unhandled.
  sft.catch(() => undefined)
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
