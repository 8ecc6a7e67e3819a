import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs'
import { join } from 'node:path'
import {
  asWriteError,
  type EvalResult,
  EvalResultSchema,
  EvalSchedule,
  type EvaluationSettings,
  isWriteError,
  type PipelineCheckpoint,
  type RunDir,
  runSeeds,
  startEvalProcess,
} from '../../actors/index.ts'
import { CheckpointFile } from '../../gpu/index.ts'
import type { ResolvedRecipe } from '../../recipes/index.ts'
import { agenticEvalTasksOf } from '../../recipes/index.ts'
import { EvalProcessError } from './errors.ts'

/**
 * The held-out evaluation settings of a run, the same for every evaluation of it (periodic and
 * final, so their numbers compare): each task at its starting level, `evaluation.k` samples of
 * `evaluation.instancesPerTask` instances, the rollout's turn length, temperature and top-p, and one seed.
 */
export function heldOutSettings(recipe: ResolvedRecipe): Omit<EvaluationSettings, 'onProgress'> {
  return {
    // A built-in task's held-out instances come from the environment registry; an agent or MCP
    // task's are its `evalInstances` (one without them is not evaluated).
    tasks: recipe.tasks.flatMap((t) =>
      t.agent === undefined && t.mcp === undefined
        ? [{ name: t.name, difficulty: t.difficulty.start }]
        : agenticEvalTasksOf(recipe).filter((a) => a.name === t.name),
    ),
    k: recipe.evaluation.k,
    instances: recipe.evaluation.instancesPerTask,
    maxNewTokens: recipe.pipeline.maxNewTokens,
    temperature: recipe.pipeline.temperature,
    top_p: recipe.pipeline.top_p,
    seed: runSeeds(recipe.seed).heldOutEvaluation,
  }
}

/** One line per row of an evaluation: `  step-50 calc: avg@8 0.312 ± 0.041, pass@8 0.750 ± 0.108`. */
export function evalRowLine(name: string, r: Record<string, unknown>): string {
  const f = (v: unknown) => (typeof v === 'number' ? v.toFixed(3) : '-')
  return `  ${name} ${r.task}: avg@${r.k} ${f(r.avg_at_k)} ± ${f(r.avg_at_k_se)}, pass@${r.k} ${f(r.pass_at_k)} ± ${f(r.pass_at_k_se)}`
}

/** The eval file name of the periodic evaluation of `version`: `step-000050`. */
export const periodicEvalName = (version: number) => `step-${String(version).padStart(6, '0')}`

/**
 * The copy of the checkpoint an evaluation in a `triad eval` process reads,
 * `eval/.step-<n>-checkpoint/`. It is removed when the evaluation is done (or failed); one that an
 * interrupted run left behind is evaluated again by the next resume (`interruptedEvaluations`).
 */
export const pinnedCheckpointDir = (dir: RunDir, version: number) =>
  join(dir.evalDir, `.${periodicEvalName(version)}-checkpoint`)

/** The suffix of a checkpoint copy being made (`.step-<n>-checkpoint.partial`): it may be incomplete. */
const PARTIAL = '.partial'

/** The files of a checkpoint an evaluation reads: weights or LoRA adapters, config, tokenizer (those present). */
const EVALUATED_FILES = [
  CheckpointFile.Weights,
  CheckpointFile.Adapters,
  CheckpointFile.AdapterConfig,
  CheckpointFile.Config,
  CheckpointFile.Tokenizer,
] as const

/** Whether `dir` holds a checkpoint's weights: `model.safetensors`, or LoRA adapters. */
const hasWeights = (dir: string) =>
  existsSync(join(dir, CheckpointFile.Weights)) || existsSync(join(dir, CheckpointFile.Adapters))

/**
 * Copies the files an evaluation reads (weights or adapters, config, tokenizer) of a checkpoint to `to`, so
 * that pruning the checkpoint (`checkpoints.keep`) while it is evaluated harms nothing. The copy is
 * made in `<to>.partial` and renamed: a `to` that exists is complete, whenever the process died.
 * @throws the file-system error when the checkpoint is gone already.
 */
function pinCheckpoint(from: string, to: string): void {
  const partial = `${to}${PARTIAL}`
  rmSync(partial, { recursive: true, force: true })
  mkdirSync(partial, { recursive: true })
  if (!hasWeights(from))
    copyFileSync(join(from, CheckpointFile.Weights), join(partial, CheckpointFile.Weights))
  for (const f of EVALUATED_FILES)
    if (existsSync(join(from, f))) copyFileSync(join(from, f), join(partial, f))
  rmSync(to, { recursive: true, force: true })
  renameSync(partial, to)
}

/**
 * The periodic evaluations that a run stopped in the middle of (SIGKILL, SIGINT, SIGTERM), found
 * from the checkpoint copies they left in `eval/`, for a resume to evaluate again: a complete copy
 * `.step-<n>-checkpoint/` is evaluated as it is; of an incomplete one (`.partial`, the run died
 * while copying) the checkpoint `checkpoints/step-<n>/` is evaluated when it still exists. Every
 * other leftover is removed (a step whose `eval/step-<n>.json` exists, an incomplete copy whose
 * checkpoint is gone, and the SFT checkpoint's copy, step 0, which the end-of-run evaluation does
 * again itself), each with a line to `log`.
 * @returns the checkpoints to evaluate again, by step.
 */
export function interruptedEvaluations(dir: RunDir, log: (line: string) => void): PipelineCheckpoint[] {
  const names = existsSync(dir.evalDir) ? readdirSync(dir.evalDir) : []
  const found = new Map<number, PipelineCheckpoint>()
  // Complete copies first: a complete and an incomplete copy of one step leave the complete one.
  const leftovers = names
    .map((name) => ({ name, m: /^\.step-(\d+)-checkpoint(\.partial)?$/.exec(name) }))
    .filter((l) => l.m)
    .sort((a, b) => Number(Boolean(a.m![2])) - Number(Boolean(b.m![2])))
  for (const { name, m } of leftovers) {
    const version = Number(m![1])
    const path = join(dir.evalDir, name)
    const evaluated = existsSync(join(dir.evalDir, `${periodicEvalName(version)}.json`))
    if (version > 0 && !m![2] && !evaluated) {
      found.set(version, { version, usedSeqs: [], dir: path })
      log(
        `the evaluation of step-${version} was interrupted when the run stopped: evaluating it again (eval/${name})`,
      )
      continue
    }
    rmSync(path, { recursive: true, force: true })
    if (evaluated || found.has(version)) continue
    if (version === 0) {
      log(`removed eval/${name}, left by an interrupted end-of-run evaluation of the SFT checkpoint`)
      continue
    }
    const checkpoint = join(dir.checkpointsDir, `step-${version}`)
    if (hasWeights(checkpoint)) {
      found.set(version, { version, usedSeqs: [], dir: checkpoint })
      log(
        `the evaluation of step-${version} was interrupted when the run stopped: evaluating it again (${checkpoint})`,
      )
    } else
      log(
        `the evaluation of step-${version} was interrupted while its checkpoint was copied, and the checkpoint is gone: step-${version} stays unevaluated`,
      )
  }
  return [...found.values()].sort((a, b) => a.version - b.version)
}

/**
 * Evaluates a checkpoint on the held-out split in a `triad eval` process (so the caller's process
 * goes on), writing `eval/<name>.json` where `name` is `periodicEvalName(version)`; the process's
 * output goes to `logs/eval.log`, each result row to `log`. The checkpoint is evaluated from a copy
 * (`pinnedCheckpointDir`, removed after), so pruning it meanwhile harms nothing; a `checkpoint.dir`
 * that is that copy already (a resumed run's interrupted evaluation) is used as it is. A step whose
 * file exists already (evaluated before a resume) is not evaluated again: its contents are returned.
 * @param names `label` for the log lines (`step-50`), `title` for the file (`held-out evaluation at step 50`).
 * @param signal aborting it kills the process and keeps the copy, for a resume to evaluate it again.
 * @returns the evaluation file's contents, its rows and every instance's result (undefined when
 *   `signal` interrupted it).
 * @throws EvalProcessError naming the log file when the process fails (RunWriteError when it failed on a write
 *   error: a full disk); the file-system error when the checkpoint is gone.
 */
export async function evaluateInProcess(
  recipe: ResolvedRecipe,
  dir: RunDir,
  checkpoint: { dir: string; version: number },
  names: { label: string; title: string },
  log: (line: string) => void,
  signal?: AbortSignal,
): Promise<EvalResult | undefined> {
  const settings = heldOutSettings(recipe)
  const name = periodicEvalName(checkpoint.version)
  const file = join(dir.evalDir, `${name}.json`)
  const read = () => EvalResultSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
  if (existsSync(file)) return read() // evaluated before a resume
  const pinned = pinnedCheckpointDir(dir, checkpoint.version)
  let interrupted = false
  try {
    if (checkpoint.dir !== pinned) pinCheckpoint(checkpoint.dir, pinned)
    log(
      `evaluating ${names.label} in the background: ${settings.instances} held-out instances x k=${settings.k} per task (logs/eval.log)`,
    )
    const child = startEvalProcess({
      ...settings,
      tasks: settings.tasks.map((t) => ({ name: t.name, difficulty: t.difficulty ?? 1 })),
      checkpoint: pinned,
      runDir: dir.path,
      name,
      step: checkpoint.version,
      title: names.title,
      backend: recipe.model.backend === 'auto' ? undefined : recipe.model.backend,
      logFile: join(dir.logsDir, 'eval.log'),
    })
    const onAbort = () => child.kill()
    signal?.addEventListener('abort', onAbort, { once: true })
    const {
      code,
      signal: killed,
      writeError,
    } = await child.exited.finally(() => signal?.removeEventListener('abort', onAbort))
    if (signal?.aborted && code !== 0) {
      interrupted = true
      log(`the evaluation of ${names.label} was interrupted by the run's stop; a resume evaluates it again`)
      return undefined
    }
    // A full disk: the process's own line says what it could not write (its log may not have it).
    if (code !== 0 && writeError) throw asWriteError(new Error(writeError), 'eval', dir.evalDir)
    if (code !== 0)
      throw new EvalProcessError(
        `triad eval exited (${killed ?? `code ${code}`}); see ${join(dir.logsDir, 'eval.log')}`,
        join(dir.logsDir, 'eval.log'),
      )
    const out = read()
    for (const r of out.rows) log(evalRowLine(names.label, r))
    return out
  } finally {
    if (!interrupted) rmSync(pinned, { recursive: true, force: true })
  }
}

/** What a skipped periodic evaluation's log line says of each reason. */
const SKIP_REASONS = {
  superseded: 'a newer checkpoint came before its turn (the periodic evaluation takes the newest)',
  pruned: 'its checkpoint was pruned before it was seen',
  stopped: 'the run ended before its turn (the end-of-run evaluation follows)',
} as const

/**
 * Starts the periodic evaluation of a run (`evaluation.every` > 0): a `triad eval` process, one at
 * a time, evaluates the checkpoint of a multiple of `every` below the step budget (the end-of-run
 * evaluation takes the last) on the held-out split and writes `eval/step-<n>.json`, like the final
 * table (`evaluateInProcess`). It never falls behind by more than one checkpoint (`EvalSchedule`):
 * the one waiting for its turn is copied to `eval/.step-<n>-checkpoint/` as soon as the learner
 * writes it, and a newer multiple replaces it (the copy is removed). Each step left unevaluated is
 * said by a line to `log` (`step-4 stays unevaluated: ...`) and an `evaluation.skipped` event in
 * `logs/run.jsonl` (`step`, `reason`: superseded, pruned or stopped). An evaluation that the run's
 * stop interrupts keeps its checkpoint copy, and the evaluations a stopped run left unfinished
 * (`interruptedEvaluations`) are done first, the first one at once. Undefined when `every` is 0.
 * @param onWriteError called with the `RunWriteError` of an evaluation that failed on a write error
 *   (a full disk), which stops the run; absent: such a failure is a log line like any other.
 */
export function startPeriodicEvaluation(
  recipe: ResolvedRecipe,
  dir: RunDir,
  maxSteps: number,
  log: (line: string) => void,
  onWriteError?: (err: unknown) => void,
): EvalSchedule | undefined {
  if (recipe.evaluation.every <= 0) return undefined
  return new EvalSchedule({
    checkpointsDir: dir.checkpointsDir,
    every: recipe.evaluation.every,
    until: maxSteps,
    pending: interruptedEvaluations(dir, log),
    // Copied at once: while another evaluation runs, pruning (`checkpoints.keep`) would delete it.
    pin: (checkpoint) => {
      const pinned = pinnedCheckpointDir(dir, checkpoint.version)
      if (existsSync(join(dir.evalDir, `${periodicEvalName(checkpoint.version)}.json`))) return checkpoint
      pinCheckpoint(checkpoint.dir, pinned)
      return { ...checkpoint, dir: pinned }
    },
    unpin: (checkpoint) => {
      const pinned = pinnedCheckpointDir(dir, checkpoint.version)
      if (checkpoint.dir === pinned) rmSync(pinned, { recursive: true, force: true })
    },
    onSkip: ({ version, reason }) => {
      log(`step-${version} stays unevaluated: ${SKIP_REASONS[reason]}`)
      // Written at once (not queued behind other appends): the event is in the file when stop returns.
      try {
        mkdirSync(dir.logsDir, { recursive: true })
        appendFileSync(
          join(dir.logsDir, 'run.jsonl'),
          `${JSON.stringify({ event: 'evaluation.skipped', time: Date.now(), step: version, reason })}\n`,
        )
      } catch (err) {
        log(`logs/run.jsonl: the skip of step-${version} was not recorded: ${(err as Error).message}`)
      }
    },
    evaluate: async (checkpoint: PipelineCheckpoint, signal: AbortSignal) => {
      const names = {
        label: `step-${checkpoint.version}`,
        title: `held-out evaluation at step ${checkpoint.version}`,
      }
      await evaluateInProcess(recipe, dir, checkpoint, names, log, signal)
    },
    onError: (err, checkpoint) =>
      onWriteError && isWriteError(err)
        ? onWriteError(asWriteError(err, 'eval', dir.evalDir))
        : log(`evaluation of step-${checkpoint.version} failed: ${(err as Error)?.message ?? err}`),
  })
}
