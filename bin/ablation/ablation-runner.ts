import { spawn } from 'node:child_process'
import {
  cpSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import stringify from 'json-stringify-pretty-compact'
import { z } from 'zod'
import {
  createRunDirAt,
  dieWithParent,
  type EvalInstance,
  EvalInstanceSchema,
  isFinalEvalFile,
  type MetricsLine,
  OWN_PROCESS_GROUP,
  onLearnerAxis,
  type RunDir,
  readEvalResults,
  readMetricsFile,
  runDirPaths,
} from '../../actors/index.ts'
import { CheckpointFile } from '../../gpu/index.ts'
import {
  formatIssues,
  RecipeError,
  type ResolvedRecipe,
  resolveRecipe,
  type TaskCatalog,
} from '../../recipes/index.ts'
import { codeVersion, shortCodeVersion } from '../run/code-version.ts'
import { heldOutSettings, periodicEvalName } from '../run/periodic-evaluation.ts'
import { recipeDifferences } from '../run/resume.ts'
import {
  type AblationPlan,
  type AblationVariant,
  BASELINE,
  variantInput,
  variantRecipe,
} from './ablation-plan.ts'
import {
  type AblationRow,
  type AblationRun,
  AblationRunStatus,
  ablationTable,
  doneRunsByCode,
} from './ablation-table.ts'
import { AblationInputError } from './errors.ts'

/** The installed `triad` command, which registers tsx itself (so it runs from any working directory). */
const triadBin = fileURLToPath(new URL('../triad.js', import.meta.url))

/** The file an ablation writes and reads back when resumed: `<out>/ablation.json`. */
export const ABLATION_FILE = 'ablation.json'

/** `ablation.json`: what was run, on what, and the table. */
export interface AblationFile {
  /** The command that made it. */
  command: string
  /** The recipe file, and its baseline resolved (the seed of the first seed). */
  recipe: { file: string; name: string; settings: Omit<ResolvedRecipe, 'derived'> }
  /** The variants: the baseline, then one per varied value (one field at a time). */
  variants: { id: string; field?: string; value?: unknown; sft: string }[]
  seeds: number[]
  tasks: string[]
  /** Samples per instance and held-out instances per task of every evaluation. */
  k: number
  instancesPerTask: number
  /**
   * Every run: its status, directory, evaluated step, why it failed, and a done run's per-instance
   * results, so the table can be resumed from this file alone when the run folders are gone (a
   * fresh checkout of a committed table).
   */
  runs: AblationRun[]
  /** Per variant, per task and for the mean: avg@k and the paired difference to the baseline. */
  rows: AblationRow[]
  /** The machine of the last sitting that changed it (each done run records its own: `AblationRun.machine`). */
  machine: { cpus: number; cpu: string; memoryGiB: number; node: string }
  /** Last change, ISO 8601 (a continue that changes nothing keeps it). */
  updated: string
}

/** How `runAblation` runs. */
export interface RunAblationOptions {
  /** The ablation's folder: `ablation.json`, `runs/`, `sft/`, `recipes/`, `logs/`. */
  out: string
  /** The recipe file (recorded). */
  recipeFile: string
  /** The command line (recorded). */
  command: string
  catalog: TaskCatalog
  /** Runs each `triad run` in one process on the in-process transport (`--in-process`). */
  inProcess?: boolean
  log: (line: string) => void
  /** Called when a run starts (`current`) and ends, with the runs done (or failed) of the total. */
  onProgress?: (p: { done: number; total: number; current?: string }) => void
  /** Called with the file after every run (it is written already). */
  onTable?: (file: AblationFile) => void | Promise<void>
}

/** What `runAblation` did. */
export interface AblationOutcome {
  file: AblationFile
  /** Runs started by this call (not the ones found done). */
  ran: number
  /** The signal that stopped it, when one did (the run it interrupted is redone by the next call). */
  signal?: 'SIGINT' | 'SIGTERM'
}

/** The final checkpoint's per-instance results of a run, from its newest end-of-run evaluation file. */
async function resultOf(dir: RunDir): Promise<{ step: number; instances: EvalInstance[] } | undefined> {
  if (!existsSync(dir.evalDir)) return undefined
  const { results } = await readEvalResults(dir)
  for (const { file, result } of results.filter((r) => isFinalEvalFile(basename(r.file))).reverse()) {
    const name = `step-${result.step}`
    const instances = (result.instances ?? []).filter((i) => i.checkpoint === name)
    if (result.step !== undefined && instances.length > 0 && file)
      return { step: result.step, instances: instances.map(({ checkpoint: _c, ...i }) => i) }
  }
  return undefined
}

/**
 * True when a run directory holds the whole cold start its recipe makes (and the SFT's evaluation):
 * the run's tokenizer and SFT weights, or for a pretrained policy (`model.hf`, whose tokenizer is
 * the model's) the SFT's adapters; the reward model's cold start when step rewards are on.
 */
function coldStartReady(dir: RunDir, recipe: ResolvedRecipe): boolean {
  const sft = recipe.sft.epochs > 0
  const rm = recipe.triad.stepReward.enabled && recipe.triad.rewardModelSft.enabled
  const pretrained = recipe.model.hf !== undefined
  const sftFile = pretrained ? CheckpointFile.Adapters : CheckpointFile.Weights
  return (
    (pretrained || existsSync(join(dir.path, 'tokenizer.json'))) &&
    (!sft || existsSync(join(dir.checkpointsDir, 'sft', sftFile))) &&
    (!rm || existsSync(join(dir.checkpointsDir, 'reward-sft', 'reward-sft.json'))) &&
    (!sft || recipe.evaluation.k === 0 || existsSync(join(dir.evalDir, `${periodicEvalName(0)}.json`)))
  )
}

/** A run as `ablation.json` stores it: what a resume reads back of it. */
const StoredRunSchema = z.object({
  variant: z.string(),
  seed: z.number().int(),
  status: z.enum(Object.values(AblationRunStatus) as [AblationRunStatus, ...AblationRunStatus[]]),
  step: z.number().int().nonnegative().optional(),
  code: z.string().optional(),
  machine: z.string().optional(),
  minutes: z.number().nonnegative().optional(),
  rlMinutes: z.number().nonnegative().optional(),
  instances: z.array(EvalInstanceSchema.omit({ checkpoint: true })).optional(),
})

/** What a done run records of how it was made: its code, machine and wall times (each when recorded). */
type RunRecord = Pick<AblationRun, 'code' | 'machine' | 'minutes' | 'rlMinutes'>

/**
 * A done run as `ablation.json` holds it: its result and record, or `undefined` for a done run
 * recorded without a result (a table written before results were stored).
 */
type StoredResult = { seed: number; step: number; record: RunRecord; instances: EvalInstance[] } | undefined

/** Key of a run: `variant@seed`. */
const runKey = (variant: string, seed: number) => `${variant}@${seed}`

/** A path as shown in a line: relative to the working directory when below it, else absolute. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path)
  return rel.startsWith('..') || rel === '' ? path : rel
}

/**
 * Wall time of a run's RL phase, min (2 decimals): from the first line of its `metrics.jsonl` (the
 * run's start) to the learner's line of its highest step; `undefined` when it has no learner line.
 */
async function rlMinutesOf(dir: RunDir): Promise<number | undefined> {
  const { lines } = await readMetricsFile(dir.metricsFile)
  const first = lines[0]
  // The learner role reports as 'learner' (actors/node/learner-actor.ts).
  const last = lines
    .filter((l) => l.role === 'learner' && onLearnerAxis(l))
    .reduce<MetricsLine | undefined>((a, l) => (a === undefined || l.step >= a.step ? l : a), undefined)
  return first && last ? Math.round((last.time - first.time) / 600) / 100 : undefined
}

/** A machine in one line, as a run records it: `2 x AMD EPYC, 24 GiB, Node v20.20.2`. */
export function machineOf(m: AblationFile['machine']): string {
  return `${m.cpus} x ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node}`
}

/** This machine, for the record: its cores and their model, memory, Node version. */
export function machine(): AblationFile['machine'] {
  const c = cpus()
  return {
    cpus: c.length,
    cpu: c[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  }
}

/** A `triad run` child: its exit and the last lines it printed. */
interface RunProcess {
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; tail: string[] }>
  kill(signal: NodeJS.Signals): void
}

/** Starts `triad <args>` in its own process group, its output appended to `logFile`. */
function startTriad(args: readonly string[], logFile: string): RunProcess {
  const line = dieWithParent(process.execPath, [triadBin, ...args], 'SIGTERM')
  const log = createWriteStream(logFile, { flags: 'a' })
  log.write(`$ triad ${args.join(' ')}\n`)
  const child = spawn(line.command, line.args, { ...OWN_PROCESS_GROUP, stdio: ['ignore', 'pipe', 'pipe'] })
  const tail: string[] = []
  const keep = (chunk: Buffer) => {
    log.write(chunk)
    for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) tail.push(l.trim())
    tail.splice(0, Math.max(0, tail.length - 20))
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; tail: string[] }>((done) =>
    child.once('close', (code, signal) => log.end(() => done({ code, signal, tail }))),
  )
  return {
    exited,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
  }
}

/**
 * Why a `triad run` failed, in one line: its exit and its `triad: ...` line (else its last line
 * naming an error, else its last line).
 */
function failureOf(exit: { code: number | null; signal: NodeJS.Signals | null; tail: string[] }): string {
  const from = [...exit.tail].reverse()
  const said =
    from.find((l) => l.startsWith('triad:')) ?? from.find((l) => /Error\b/.test(l)) ?? from[0] ?? 'no output'
  return `${exit.signal ? `killed by ${exit.signal}` : `exit ${exit.code}`}: ${said}`
}

/** The variants as `ablation.json` holds them. */
function storedVariants(plan: AblationPlan): AblationFile['variants'] {
  return plan.variants.map((v) => ({
    id: v.id,
    ...(v.field === undefined ? {} : { field: v.field, value: v.value }),
    sft: v.sftGroup,
  }))
}

/** The table `file` holds, or undefined when there is none or it does not read as a JSON object. */
function storedTable(file: string): AblationFile | undefined {
  try {
    const table = JSON.parse(readFileSync(file, 'utf8')) as unknown
    return typeof table === 'object' && table !== null && !Array.isArray(table)
      ? (table as AblationFile)
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Checks that `out` can hold this ablation before anything runs: it is a folder (or absent, under a
 * folder: its nearest existing parent is not a file), and
 * its `ablation.json`, when there is one, is a table of the same variants and the same recipe. The
 * stored baseline settings are read by today's schema (`resolveRecipe`: fields added since the
 * table was made take their defaults, renamed fields move) and compared with the recipe's, so a
 * table made before a field existed resumes as long as the recipe leaves that field at its
 * default, and any other difference is named.
 * @returns The done runs' results the table holds, by `variant@seed` (empty without a table): a
 *   resume keeps them for the runs whose folders are gone.
 * @throws AblationInputError naming what differs (each setting with its stored and current value,
 *   or the variants), an `out` that is a file or under one, an `ablation.json` that does not read, or a stored
 *   run whose results do not read (naming the run).
 */
export function checkAblationOut(
  plan: AblationPlan,
  out: string,
  catalog: TaskCatalog,
): Map<string, StoredResult> {
  const dir = resolve(out)
  if (existsSync(dir) && !statSync(dir).isDirectory())
    throw new AblationInputError(`--out ${out} is a file, not a folder`)
  // The folder is made later, with its parents: the nearest one that exists must be a folder.
  let parent = dirname(dir)
  while (!existsSync(parent)) parent = dirname(parent)
  if (!statSync(parent).isDirectory())
    throw new AblationInputError(`--out ${out} cannot be made: ${parent} is a file, not a folder`)
  const fileOf = join(dir, ABLATION_FILE)
  if (!existsSync(fileOf)) return new Map()
  let before: Partial<AblationFile>
  try {
    before = JSON.parse(readFileSync(fileOf, 'utf8')) as Partial<AblationFile>
  } catch (err) {
    throw new AblationInputError(
      `${fileOf} does not read (${(err as Error).message}); move it away to start the table again, or give another --out`,
      { cause: err },
    )
  }
  if (typeof before !== 'object' || before === null || Array.isArray(before))
    throw new AblationInputError(
      `${fileOf} is not an ablation table (not a JSON object); move it away to start the table again, or give another --out`,
    )
  const again = 'give another --out, or the same recipe and --vary options (--seeds may change)'
  const variants = JSON.parse(JSON.stringify(storedVariants(plan))) as AblationFile['variants']
  if (!isDeepStrictEqual(before.variants, variants))
    throw new AblationInputError(
      `${out} holds an ablation of other variants (${(before.variants ?? []).map((v) => v.id).join(', ') || 'none'}; now ${variants.map((v) => v.id).join(', ')}); ${again}`,
    )
  const { derived: _d, ...settings } = plan.base
  const now = JSON.parse(JSON.stringify(settings)) as Record<string, unknown>
  if (isDeepStrictEqual(before.recipe?.settings, now)) return storedResults(before.runs, fileOf, plan)
  let differences: string[]
  try {
    const read = resolveRecipe(before.recipe?.settings, catalog)
    differences = recipeDifferences(read, plan.base).map(
      (d) => `${d.path}: ${JSON.stringify(d.stored)} in the table, ${JSON.stringify(d.current)} now`,
    )
  } catch (err) {
    if (!(err instanceof RecipeError)) throw err
    differences = [
      `its stored settings are not a recipe today (${formatIssues(err.issues).replaceAll('\n', '; ')})`,
    ]
  }
  if (differences.length)
    throw new AblationInputError(
      `${out} holds an ablation of another recipe: ${differences.slice(0, 8).join('; ')}${differences.length > 8 ? `; and ${differences.length - 8} more` : ''}; ${again}`,
    )
  return storedResults(before.runs, fileOf, plan)
}

/**
 * The done runs' results of a table's `runs`, by `variant@seed` (`undefined` for a done run
 * recorded without results: a table written before results were stored), each checked against
 * the plan: a variant of the table, listed once, with a result for exactly the held-out instances
 * of the recipe (its tasks at their starting levels, indices `0..instancesPerTask-1`) at its `k`,
 * `successes` at most `k`.
 * @throws AblationInputError naming the first run that does not read or does not fit.
 */
function storedResults(runs: unknown, fileOf: string, plan: AblationPlan): Map<string, StoredResult> {
  const refuse = (why: string) =>
    new AblationInputError(`${fileOf}: ${why}; move it away to start the table again, or give another --out`)
  if (runs === undefined) throw refuse('it holds no runs list')
  if (!Array.isArray(runs)) throw refuse('runs is not a list')
  const ids = new Set(plan.variants.map((v) => v.id))
  const held = heldOutSettings(plan.base)
  const instanceKey = (task: string, difficulty: number, index: number) =>
    `${task} level ${difficulty} #${index}`
  const expected = plan.base.tasks.flatMap((t) =>
    Array.from({ length: held.instances }, (_, i) => instanceKey(t.name, t.difficulty.start, i)),
  )
  const results = new Map<string, StoredResult>()
  const listed = new Set<string>()
  runs.forEach((raw, i) => {
    const run = StoredRunSchema.safeParse(raw)
    const r = (typeof raw === 'object' && raw !== null ? raw : {}) as { variant?: unknown; seed?: unknown }
    const name = `run ${i + 1} (${typeof r.variant === 'string' ? r.variant : '?'} seed ${typeof r.seed === 'number' ? r.seed : '?'})`
    if (!run.success)
      throw refuse(
        `${name} does not read (${run.error.issues.map((e) => `${e.path.join('.') || 'the run'}: ${e.message}`).join('; ')})`,
      )
    const { variant, seed, status, step, code, machine, minutes, rlMinutes, instances } = run.data
    if (!ids.has(variant)) throw refuse(`${name} names a variant the table does not have`)
    const key = runKey(variant, seed)
    if (listed.has(key)) throw refuse(`${name} is listed twice`)
    listed.add(key)
    if (status !== AblationRunStatus.Done) return
    if (step === undefined || instances === undefined) {
      results.set(key, undefined)
      return
    }
    const bad = instances.find((x) => x.k !== held.k || x.successes > x.k)
    if (bad)
      throw refuse(
        `${name}: ${instanceKey(bad.task, bad.difficulty, bad.index)} has ${bad.successes} successes of k ${bad.k} (the table's k is ${held.k})`,
      )
    const got = instances.map((x) => instanceKey(x.task, x.difficulty, x.index))
    const twice = got.find((g, j) => got.indexOf(g) !== j)
    const missing = expected.filter((e) => !got.includes(e))
    const extra = got.filter((g) => !expected.includes(g))
    if (twice || missing.length || extra.length)
      throw refuse(
        `${name}: its results are not the table's held-out instances (${[
          twice ? `${twice} twice` : '',
          missing.length
            ? `missing ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}`
            : '',
          extra.length
            ? `not held out: ${extra.slice(0, 3).join(', ')}${extra.length > 3 ? ` and ${extra.length - 3} more` : ''}`
            : '',
        ]
          .filter(Boolean)
          .join('; ')})`,
      )
    const record = Object.fromEntries(
      Object.entries({ code, machine, minutes, rlMinutes }).filter(([, v]) => v !== undefined),
    ) as RunRecord
    results.set(key, { seed, step, record, instances })
  })
  return results
}

/**
 * Runs an ablation (`planAblation`): every variant at every seed is one `triad run` (a child
 * process; its output in `<out>/logs/<run>.log`) in `<out>/runs/<slug>-s<seed>/` (`AblationVariant.slug`), seed by seed,
 * each evaluated at its end on the recipe's held-out instances with the seed's sampling seeds
 * (the same for every variant). The cold start is made once per seed and SFT group
 * (`triad run --sft-only` in `<out>/sft/<group>-s<seed>/`) and copied into each run of the group
 * before it starts (tokenizer, SFT checkpoint, the reward model's cold start, the SFT checkpoint's
 * evaluation when the run evaluates alike), so the variants of one seed start RL from the same
 * weights and the time budget is spent on RL. After every run `ablation.json` is written again
 * with the table (`ablationTable`).
 *
 * Resumable: a run whose directory holds an end-of-run evaluation is done and not run again, and
 * so is a run whose directory is gone when `ablation.json` holds its result (a committed table
 * continued in a fresh checkout: its per-instance results are in the file); a
 * run that was interrupted or failed is removed and done again from the start (a resumed time
 * budget would give it more RL time than the others); a cold start that was interrupted is
 * resumed (`--resume --sft-only`, which does the SFT again). A run that fails is recorded with its
 * exit and last line, and the others go on. SIGINT or SIGTERM stops the run in progress (the
 * signal is passed on) and ends the ablation after it.
 * @throws AblationInputError as `checkAblationOut`.
 */
export async function runAblation(plan: AblationPlan, options: RunAblationOptions): Promise<AblationOutcome> {
  const out = resolve(options.out)
  const fileOf = join(out, ABLATION_FILE)
  const storedRuns = checkAblationOut(plan, out, options.catalog)
  const { derived: _d, ...settings } = plan.base
  const variants = storedVariants(plan)
  mkdirSync(out, { recursive: true })
  // The folders of runs, cold starts, recipes and logs are made when a run needs them: a
  // continue that has nothing left to run adds nothing to `out`.
  const total = plan.variants.length * plan.seeds.length
  let keptFromFile = 0
  const runs = new Map<string, AblationRun>()
  const runDirOf = (v: AblationVariant, seed: number) => runDirPaths(join(out, 'runs', `${v.slug}-s${seed}`))
  // Seeds past --seeds that hold results (a table run before with a larger --seeds) stay in the
  // table, not run: a smaller --seeds never drops results from ablation.json.
  const slugs = new Set(plan.variants.map((v) => v.slug))
  const resultSeeds = new Set([...storedRuns.values()].flatMap((result) => (result ? [result.seed] : [])))
  for (const name of existsSync(join(out, 'runs')) ? readdirSync(join(out, 'runs')) : []) {
    const m = /^(.*)-s(\d+)$/.exec(name)
    if (m && slugs.has(m[1]!)) resultSeeds.add(Number(m[2]))
  }
  const extraSeeds = [...resultSeeds].filter((s) => !plan.seeds.includes(s))
  const seeds = [...plan.seeds, ...extraSeeds].sort((a, b) => a - b)
  for (const seed of seeds)
    for (const v of plan.variants) {
      const dir = runDirOf(v, seed)
      // The run's folder when it is here; the table's record of it when the folder is gone.
      const stored = storedRuns.get(runKey(v.id, seed))
      const folder = existsSync(dir.path)
      const kept = folder ? undefined : stored
      if (kept) keptFromFile++
      else if (!folder && storedRuns.has(runKey(v.id, seed)) && plan.seeds.includes(seed))
        options.log(
          `${v.id} seed ${seed}: ${shown(fileOf)} records it done without its results (a table written before results were stored) and its folder is gone: it runs again`,
        )
      const result = kept ?? (await resultOf(dir))
      // How the run was made (code, machine, wall times), as the table recorded it: a folder's
      // result keeps the record, and its RL phase is read from its metrics when the record has none
      // (a run of a table written before the wall times were recorded).
      const rlMinutes = stored?.record.rlMinutes ?? (result && !kept ? await rlMinutesOf(dir) : undefined)
      runs.set(runKey(v.id, seed), {
        variant: v.id,
        seed,
        dir: relative(out, dir.path),
        status: result ? AblationRunStatus.Done : AblationRunStatus.Missing,
        ...(result
          ? {
              step: result.step,
              ...stored?.record,
              ...(rlMinutes !== undefined ? { rlMinutes } : {}),
              instances: result.instances,
            }
          : {}),
      })
    }
  // Seeds past --seeds without a result anywhere are not the table's.
  for (const seed of extraSeeds)
    if (plan.variants.every((v) => runs.get(runKey(v.id, seed))!.status === AblationRunStatus.Missing))
      for (const v of plan.variants) runs.delete(runKey(v.id, seed))
  const tableSeeds = seeds.filter((s) => plan.variants.some((v) => runs.has(runKey(v.id, s))))
  // Runs made with other code than this: kept, and said, since a table filled in over several
  // sittings compares them with runs of today's code.
  const code = codeVersion()
  const others = [...doneRunsByCode([...runs.values()])].filter(([c]) => c !== code)
  const named = (done: AblationRun[]) =>
    `${done
      .slice(0, 4)
      .map((r) => `${r.variant} seed ${r.seed}`)
      .join(', ')}${done.length > 4 ? ` and ${done.length - 4} more` : ''}`
  if (others.length)
    options.log(
      `runs made with other code than this (${shortCodeVersion(code)}): ${others.map(([c, done]) => `${named(done)} with ${shortCodeVersion(c)}`).join('; ')}; their results are kept (compare across code with care; ablation.json records each run's full commit)`,
    )
  const pastSeeds = tableSeeds.filter((s) => !plan.seeds.includes(s))
  if (pastSeeds.length)
    options.log(
      `seed${pastSeeds.length === 1 ? '' : 's'} ${pastSeeds.join(', ')} past --seeds ${plan.seeds.length} hold${pastSeeds.length === 1 ? 's' : ''} results: kept in the table, not run`,
    )
  const tasks = heldOutSettings(plan.base).tasks.map((t) => t.name)
  // What ablation.json holds: read once here, then kept by `write`, which alone changes the file.
  let onDisk = storedTable(fileOf)
  const write = async (): Promise<AblationFile> => {
    const all = [...runs.values()]
    const file: AblationFile = {
      command: options.command,
      recipe: { file: options.recipeFile, name: plan.base.name, settings },
      variants,
      seeds: tableSeeds,
      tasks,
      k: plan.base.evaluation.k,
      instancesPerTask: plan.base.evaluation.instancesPerTask,
      runs: all,
      rows: ablationTable(
        tasks,
        plan.variants.map((v) => v.id),
        all,
      ),
      machine: machine(),
      updated: new Date().toISOString(),
    }
    // A table that says what the file on disk says is not written: that file's `machine` and
    // `updated` name the sitting that last changed it, and a continue with nothing left to do, here
    // or on another machine, leaves ablation.json as it was (bytes and modification time).
    const table = JSON.parse(JSON.stringify(file)) as AblationFile
    if (onDisk && isDeepStrictEqual({ ...onDisk, machine: table.machine, updated: table.updated }, table)) {
      file.machine = onDisk.machine
      file.updated = onDisk.updated
    } else {
      // Written whole or not at all: a kill mid-write leaves the previous table.
      const tmp = `${fileOf}.tmp-${process.pid}`
      writeFileSync(tmp, `${stringify(file, { maxLength: 110 })}\n`)
      renameSync(tmp, fileOf)
      onDisk = table
    }
    await options.onTable?.(file)
    return file
  }
  const finished = () =>
    [...runs.values()].filter((r) => plan.seeds.includes(r.seed) && r.status !== AblationRunStatus.Missing)
      .length

  // A signal stops the child in progress (passed on) and ends the loop after it.
  let signal: 'SIGINT' | 'SIGTERM' | undefined
  let current: RunProcess | undefined
  const onSignal = (s: 'SIGINT' | 'SIGTERM') => {
    signal ??= s
    current?.kill(s)
  }
  const onSigint = () => onSignal('SIGINT')
  const onSigterm = () => onSignal('SIGTERM')
  process.on('SIGINT', onSigint)
  process.on('SIGTERM', onSigterm)
  const triad = async (args: string[], name: string) => {
    mkdirSync(join(out, 'logs'), { recursive: true })
    current = startTriad(
      [...args, ...(options.inProcess ? ['--in-process'] : [])],
      join(out, 'logs', `${name}.log`),
    )
    try {
      return await current.exited
    } finally {
      current = undefined
    }
  }
  /** Writes the recipe file of a variant at a seed, for `triad run`: the input as a plain module. */
  const recipeFileOf = (v: AblationVariant, seed: number) => {
    const file = join(out, 'recipes', `${v.slug}-s${seed}.mjs`)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, `export default ${JSON.stringify(variantInput(plan, v, seed), null, 2)}\n`)
    return file
  }

  if (keptFromFile > 0)
    options.log(
      `${keptFromFile} run${keptFromFile === 1 ? '' : 's'} kept from ${shown(fileOf)} (their folders are not here)`,
    )
  let ran = 0
  let file = await write()
  try {
    for (const seed of plan.seeds) {
      const sftFailed = new Map<string, string>()
      for (const v of plan.variants) {
        if (signal) break
        const run = runs.get(runKey(v.id, seed))!
        if (run.status === AblationRunStatus.Done) continue
        const label = `${v.id} seed ${seed}`
        options.onProgress?.({ done: finished(), total, current: label })
        // The cold start of the variant's group at this seed, made once.
        const members = plan.variants.filter((m) => m.sftGroup === v.sftGroup)
        const holder =
          members.find((m) => {
            const r = variantRecipe(plan, m, seed, options.catalog)
            return r.triad.stepReward.enabled && r.triad.rewardModelSft.enabled
          }) ?? members[0]!
        const holderRecipe = variantRecipe(plan, holder, seed, options.catalog)
        const sftDir = runDirPaths(join(out, 'sft', `${v.sftGroup}-s${seed}`))
        if (!sftFailed.has(v.sftGroup) && !coldStartReady(sftDir, holderRecipe)) {
          const stored = existsSync(sftDir.recipeFile)
            ? (JSON.parse(readFileSync(sftDir.recipeFile, 'utf8')) as unknown)
            : undefined
          if (!isDeepStrictEqual(stored, JSON.parse(JSON.stringify(holderRecipe)))) {
            // Not made yet, or made for another recipe (the recipe file changed): made anew.
            rmSync(sftDir.path, { recursive: true, force: true })
            await createRunDirAt(sftDir.path, holderRecipe)
          }
          options.log(
            `cold start of ${v.sftGroup === BASELINE ? 'the baseline' : v.id} at seed ${seed} (triad run --sft-only)`,
          )
          const exit = await triad(
            ['run', recipeFileOf(holder, seed), '--resume', sftDir.path, '--sft-only'],
            `sft-${basename(sftDir.path)}`,
          )
          if (signal) {
            options.log(
              `cold start of ${v.sftGroup === BASELINE ? 'the baseline' : v.id} at seed ${seed} interrupted (${signal}): the next triad ablate resumes it`,
            )
            break
          }
          if (exit.code !== 0 || !coldStartReady(sftDir, holderRecipe))
            sftFailed.set(
              v.sftGroup,
              `its cold start failed (${failureOf(exit)}; log ${shown(join(out, 'logs', `sft-${basename(sftDir.path)}.log`))})`,
            )
        }
        const dir = runDirOf(v, seed)
        const failedSft = sftFailed.get(v.sftGroup)
        if (failedSft) {
          Object.assign(run, { status: AblationRunStatus.Failed, reason: failedSft })
          options.log(`${label} failed: ${failedSft}`)
          file = await write()
          continue
        }
        if (existsSync(dir.path)) {
          options.log(
            `${label}: ${shown(dir.path)} holds no result (interrupted or failed): running it again from the start`,
          )
          rmSync(dir.path, { recursive: true, force: true })
        }
        const recipe = variantRecipe(plan, v, seed, options.catalog)
        await createRunDirAt(dir.path, recipe)
        // The group's cold start, and the SFT checkpoint's evaluation when this run evaluates alike.
        if (existsSync(join(sftDir.path, 'tokenizer.json')))
          cpSync(join(sftDir.path, 'tokenizer.json'), join(dir.path, 'tokenizer.json'))
        for (const sub of ['sft', 'reward-sft'])
          if (existsSync(join(sftDir.checkpointsDir, sub)))
            cpSync(join(sftDir.checkpointsDir, sub), join(dir.checkpointsDir, sub), { recursive: true })
        const sftEval = join(sftDir.evalDir, `${periodicEvalName(0)}.json`)
        if (existsSync(sftEval) && isDeepStrictEqual(heldOutSettings(recipe), heldOutSettings(holderRecipe)))
          cpSync(sftEval, join(dir.evalDir, `${periodicEvalName(0)}.json`))
        options.log(`running ${label} in ${shown(dir.path)}`)
        const started = Date.now()
        ran++
        const exit = await triad(['run', recipeFileOf(v, seed), '--resume', dir.path], basename(dir.path))
        if (signal) {
          options.log(`${label} interrupted (${signal}): the next triad ablate runs it again`)
          break
        }
        const result = await resultOf(dir)
        if (exit.code === 0 && result) {
          const minutes = Math.round((Date.now() - started) / 600) / 100
          const rlMinutes = await rlMinutesOf(dir)
          Object.assign(run, {
            status: AblationRunStatus.Done,
            step: result.step,
            code,
            machine: machineOf(machine()),
            minutes,
            ...(rlMinutes !== undefined ? { rlMinutes } : {}),
            instances: result.instances,
          })
          options.log(
            `${label} done: step ${result.step} in ${minutes.toFixed(1)} min${rlMinutes !== undefined ? ` (RL ${rlMinutes.toFixed(1)} min)` : ''}`,
          )
        } else {
          const reason =
            exit.code !== 0
              ? failureOf(exit)
              : existsSync(join(dir.checkpointsDir, 'latest.json'))
                ? 'it ended (exit 0) without an end-of-run evaluation of its last step'
                : `it ended (exit 0) without a step checkpoint to evaluate (see ${shown(join(dir.logsDir, 'learner.log'))})`
          Object.assign(run, {
            status: AblationRunStatus.Failed,
            reason: `${reason} (log ${shown(join(out, 'logs', `${basename(dir.path)}.log`))})`,
          })
          options.log(`${label} failed: ${run.reason}`)
        }
        file = await write()
      }
      if (signal) break
    }
  } finally {
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
  }
  options.onProgress?.({ done: finished(), total })
  return { file, ran, ...(signal ? { signal } : {}) }
}
