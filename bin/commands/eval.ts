import { existsSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import Table from 'cli-table3'
import type { Command } from 'commander'
import {
  checkPolicyEndpoint,
  checkSandboxesOf,
  type EvalResult,
  type Evaluation,
  type EvaluationTask,
  episodeSeeds,
  evalResultFile,
  evaluateEpisodes,
  evaluatePolicy,
  getTask,
  isAgenticTask,
  OpenAIPolicy,
  type OpenAIPolicyOptions,
  openRunDir,
  PolicyEndpointError,
  type RunDir,
  RunFileExistsError,
  runDirPaths,
  writeEvalResult,
} from '../../actors/index.ts'
import { CheckpointError, chooseBackend, loadCheckpointPolicy, TemplateError } from '../../gpu/index.ts'
import { checkToken } from '../../protocols/index.ts'
import { resolveCheckpointPath } from '../checkpoint-path.ts'
import { CliError, UsageError } from '../errors.ts'
import { integerOption, numberOption } from '../numeric-option.ts'
import { openAIPolicyUrl } from '../policy-option.ts'
import { checkLevel, parseTasks, type TaskLevel } from '../task-list.ts'

/**
 * Options of `triad eval` (numbers already parsed and bounded by commander). `tasks`, `k`,
 * `instances` and `maxNewTokens` left out come from the run's recipe when the argument is a run
 * directory (`runEvalSettings`), else from `EVAL_DEFAULTS`.
 */
export interface EvalOptions {
  /** Comma-separated task names, each optionally with its level (`calc:2,maze`). */
  tasks?: string
  /** Samples per instance, >= 1. */
  k?: number
  /** Held-out instances per task, >= 1. */
  instances?: number
  /** Level of every task without its own level in `tasks`. */
  difficulty?: number
  /** Most new tokens per assistant turn, >= 1. */
  maxNewTokens?: number
  temperature: number
  /** Nucleus sampling mass, in (0, 1] (1: off). */
  topP: number
  /** Base sampling seed (default: a run directory's evaluation seed, else `EVAL_DEFAULTS.seed`). */
  seed?: number
  /** Run id (or, as before, a run directory's path): the table also goes to its `eval/`. */
  run?: string
  /** With `run`: the folder that holds the run directory (default `runs`). */
  runsDir?: string
  /** With `run`: the eval file's name (`eval/<name>.json`; default `eval-<time>`). */
  name?: string
  /** With `run`: the learner step of the evaluated weights, recorded in the file. */
  step?: number
  /** With `run`: the table's heading. */
  title?: string
  /** Tensor backend to force (default: the best available). */
  backend?: string
  /** `openai:URL`: evaluate the model behind an OpenAI-compatible endpoint instead of a checkpoint. */
  policy?: string
  /** With `policy`: the model name sent to the endpoint. */
  model?: string
  /** With `policy`: episodes played at once. */
  concurrency?: number
  /** With `policy`: deadline of one request, ms. */
  timeoutMs?: number
  json?: boolean
}

/** Most new tokens per turn of a served model when `--max-new-tokens` is not given. */
export const SERVED_MAX_NEW_TOKENS = 1024

/**
 * The run directory of `--run`: `<runsDir>/<run>` for a run id; a value with a path separator
 * is taken as the run directory itself (the form before `--run` meant the id everywhere).
 * @throws UsageError for a value that is neither (an id with characters a NATS token refuses).
 */
export function runDirOf(run: string, runsDir = 'runs'): string {
  if (run.includes(sep) || run.includes('/')) return run
  try {
    checkToken(run, 'run id')
  } catch (err) {
    throw new UsageError(`--run ${run}: ${(err as Error).message}`, { cause: err })
  }
  return join(runsDir, run)
}

/** What `triad eval` evaluates when neither an option nor a run's recipe says otherwise. */
export const EVAL_DEFAULTS = {
  tasks: 'calc,sql,maze',
  k: 8,
  instances: 16,
  maxNewTokens: 96,
  seed: 0,
} as const

/** The settings of `triad eval` that a run directory's recipe can fill in. */
type RunEvalSetting = keyof typeof EVAL_DEFAULTS

/**
 * The checkpoint directory `triad eval` evaluates for its argument: a checkpoint directory (it
 * holds `config.json`) as it is; a run directory (it holds `recipe.json`) stands for its newest
 * checkpoint (`latestRunCheckpoint`), and a line on stderr says which.
 * @throws CliError for a run without checkpoints, and for a path that is neither, with an example
 *   of a checkpoint path.
 */
export function resolveEvalCheckpoint(path: string, log: (line: string) => void = () => {}): string {
  return resolveCheckpointPath(path, { what: 'a checkpoint', doing: 'evaluating', todo: 'evaluate' }, log)
}

/**
 * The settings of `triad eval RUN_DIR` that the command line left out (`given[s] === undefined`),
 * taken from the run's `recipe.json` as the run's own evaluations use them (`heldOutSettings`):
 * its tasks, each at its `difficulty.start` level (at `difficulty` instead when given),
 * `evaluation.k`, `evaluation.instancesPerTask`, `pipeline.maxNewTokens` and the sampling seed
 * (so the numbers pair up with the run's own evaluations, `pairedDifference`). One line to `log`
 * says which; nothing is read or said when every setting was given.
 * @throws CliError when `recipe.json` is not JSON or not a valid recipe (the recipe's problems,
 *   and how to evaluate without it).
 */
async function runEvalSettings(
  path: string,
  given: Record<RunEvalSetting, unknown>,
  difficulty: number | undefined,
  log: (line: string) => void,
): Promise<{ tasks?: TaskLevel[]; k?: number; instances?: number; maxNewTokens?: number; seed?: number }> {
  const missing = (Object.keys(given) as RunEvalSetting[]).filter((s) => given[s] === undefined)
  if (missing.length === 0) return {}
  const file = runDirPaths(path).recipeFile
  const without = 'give --tasks, --k, --instances, --max-new-tokens and --seed to evaluate without it'
  let stored: unknown
  try {
    stored = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new CliError(`cannot read the run's recipe: ${file}: not JSON; ${without}`, { cause: err })
  }
  // `recipes/` loads the tensor library: imported only when a run's recipe is read.
  const { builtinTaskCatalog, RecipeError, resolveRecipe } = await import('../../recipes/index.ts')
  const { heldOutSettings } = await import('../run/index.ts')
  let settings: ReturnType<typeof heldOutSettings>
  try {
    settings = heldOutSettings(resolveRecipe(stored, builtinTaskCatalog(), file))
  } catch (err) {
    if (err instanceof RecipeError) throw new CliError(`${err.message}\n${without}`, { cause: err })
    throw err
  }
  const out: { tasks?: TaskLevel[]; k?: number; instances?: number; maxNewTokens?: number; seed?: number } =
    {}
  const said: string[] = []
  if (given.tasks === undefined) {
    out.tasks = settings.tasks.map((t) => ({
      ...t,
      difficulty:
        difficulty === undefined || isAgenticTask(t)
          ? t.difficulty
          : checkLevel(getTask(t.name), difficulty, `--difficulty ${difficulty}`),
    }))
    said.push(
      `tasks ${settings.tasks.map((t) => (difficulty === undefined ? `${t.name}:${t.difficulty}` : t.name)).join(',')}`,
    )
  }
  if (given.k === undefined) {
    out.k = settings.k
    said.push(`k ${settings.k}`)
  }
  if (given.instances === undefined) {
    out.instances = settings.instances
    said.push(`${settings.instances} instances per task`)
  }
  if (given.maxNewTokens === undefined) {
    out.maxNewTokens = settings.maxNewTokens
    said.push(`at most ${settings.maxNewTokens} new tokens per turn`)
  }
  if (given.seed === undefined) {
    out.seed = settings.seed
    said.push(`sampling seed ${settings.seed}`)
  }
  log(`using the run's ${said.join(', ')} (${file}; an option given on the command line wins)`)
  return out
}

/**
 * The agent and MCP tasks of the run in directory `dir` that have held-out instances, by name, as
 * its evaluations play them (`heldOutSettings`); none when `dir` is no run directory (no
 * `recipe.json`) or its recipe has none.
 * @throws CliError when `recipe.json` is not JSON or not a valid recipe.
 */
async function runAgenticTasks(dir: string): Promise<Map<string, EvaluationTask>> {
  const file = runDirPaths(dir).recipeFile
  if (!existsSync(file)) return new Map()
  let stored: unknown
  try {
    stored = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new CliError(`cannot read the run's recipe: ${file}: not JSON`, { cause: err })
  }
  const { builtinTaskCatalog, RecipeError, resolveRecipe } = await import('../../recipes/index.ts')
  const { heldOutSettings } = await import('../run/index.ts')
  try {
    const tasks = heldOutSettings(resolveRecipe(stored, builtinTaskCatalog(), file)).tasks
    return new Map(tasks.filter(isAgenticTask).map((t) => [t.name, t]))
  } catch (err) {
    if (err instanceof RecipeError) throw new CliError(err.message, { cause: err })
    throw err
  }
}

/**
 * `--tasks` where a name the registry lacks may be one of the run's agent or MCP tasks (`agentic`,
 * read at the first such name; taken as the run evaluates it; a level after its name must be its one
 * level, 1); the other entries are built-in tasks (`parseTasks`).
 * @throws UsageError as `parseTasks` (an unknown name that is no agent or MCP task of the run
 *   either), and for an agent or MCP task at a level other than its own; CliError as `runAgenticTasks`.
 */
async function parseRunTasks(
  list: string,
  difficulty: number | undefined,
  agentic: () => Promise<ReadonlyMap<string, EvaluationTask>>,
): Promise<(TaskLevel | EvaluationTask)[]> {
  let runTasks: ReadonlyMap<string, EvaluationTask> | undefined
  const out: (TaskLevel | EvaluationTask)[] = []
  for (const entry of list.split(',')) {
    const [name = '', level] = entry.trim().split(':')
    if (isBuiltinTask(name)) {
      out.push(parseTasks(entry, difficulty)[0]!)
      continue
    }
    runTasks ??= await agentic()
    const task = runTasks.get(name)
    if (!task) {
      out.push(parseTasks(entry, difficulty)[0]!) // throws the unknown task's usage error
      continue
    }
    if (level !== undefined && level !== String(task.difficulty ?? 1))
      throw new UsageError(
        `--tasks ${entry.trim()}: '${name}' is an agent or MCP task of the run: it has the one level ${task.difficulty ?? 1}`,
      )
    out.push(task)
  }
  return out
}

/** True when the environment registry has a task of this name. */
function isBuiltinTask(name: string): boolean {
  try {
    getTask(name)
    return true
  } catch {
    return false
  }
}

/**
 * `triad eval CHECKPOINT`: avg@k and pass@k (with standard errors) per task on the held-out
 * split, k samples of each of `--instances` eval instances. `CHECKPOINT` may be a run directory,
 * which stands for its latest checkpoint and evaluates as the run does: the tasks, k, instances
 * and turn length not given come from its `recipe.json` (`runEvalSettings`). With `--run`, the
 * table also goes to the run's `eval/<name>.json` (the periodic evaluation of `triad run` uses this).
 * With `--policy openai:URL` and no checkpoint, the model behind that endpoint (`runServedEval`).
 * @throws CliError for a checkpoint that cannot be loaded, an unknown task or a bad level, a run
 *   directory whose `recipe.json` is not a valid recipe (when a setting is read from it), and,
 *   before anything is evaluated, for a `--name` whose `eval/<name>.json` exists already and for
 *   a task's code sandbox that fails its start check (`checkSandboxesOf`).
 */
export async function runEval(path: string | undefined, o: EvalOptions): Promise<void> {
  if (o.policy !== undefined) return runServedEval(path, o)
  if (path === undefined)
    throw new UsageError(
      'give a checkpoint or run directory to evaluate, or --policy openai:URL for a served model',
    )
  for (const [given, option] of [
    [o.model, '--model'],
    [o.concurrency, '--concurrency'],
    [o.timeoutMs, '--timeout-ms'],
  ] as const)
    if (given !== undefined)
      throw new UsageError(`${option} is a setting of --policy openai:URL: give --policy too`)
  // A name of `--tasks` the registry lacks may be one of the run's agent or MCP tasks
  // (docs/gateway.md#held-out-evaluation): its recipe is read only then.
  const explicitTasks =
    o.tasks === undefined
      ? undefined
      : await parseRunTasks(o.tasks, o.difficulty, () =>
          runAgenticTasks(o.run ? runDirOf(o.run, o.runsDir) : path),
        )
  if ((o.name !== undefined || o.step !== undefined || o.title !== undefined) && !o.run)
    throw new UsageError('--name, --step and --title describe the file written with --run: give --run too')
  if (o.name !== undefined && !/^[A-Za-z0-9._-]+$/.test(o.name))
    throw new UsageError(`--name must be a file name of letters, digits, '.', '_' and '-', got '${o.name}'`)
  const step = o.step
  const checkpoint = resolveEvalCheckpoint(path, (line) => process.stderr.write(`${line}\n`))
  const given = { tasks: o.tasks, k: o.k, instances: o.instances, maxNewTokens: o.maxNewTokens, seed: o.seed }
  // A checkpoint directory comes back as it is; a run directory as its latest checkpoint.
  const fromRun =
    checkpoint === path
      ? {}
      : await runEvalSettings(path, given, o.difficulty, (line) => process.stderr.write(`${line}\n`))
  const tasks = explicitTasks ?? fromRun.tasks ?? parseTasks(EVAL_DEFAULTS.tasks, o.difficulty)
  const k = o.k ?? fromRun.k ?? EVAL_DEFAULTS.k
  const instances = o.instances ?? fromRun.instances ?? EVAL_DEFAULTS.instances
  const maxNewTokens = o.maxNewTokens ?? fromRun.maxNewTokens ?? EVAL_DEFAULTS.maxNewTokens
  const seed = o.seed ?? fromRun.seed ?? EVAL_DEFAULTS.seed
  const { run, name } = await evalTarget(o)
  // The tasks' code sandbox before the evaluation: a dead one would only turn episodes into task_error.
  await checkSandboxesOf(tasks.map((t) => t.name)).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
  })
  await chooseBackend({ backend: o.backend, log: (line) => process.stderr.write(`${line}\n`) })
  let loaded: Awaited<ReturnType<typeof loadCheckpointPolicy>>
  try {
    loaded = await loadCheckpointPolicy(checkpoint)
  } catch (err) {
    if (err instanceof CheckpointError || err instanceof TemplateError)
      throw new CliError(`cannot load checkpoint: ${err.message}`, { cause: err })
    throw err
  }
  const evaluation = await evaluatePolicy(loaded.model, loaded.format, {
    tasks,
    k,
    instances,
    maxNewTokens,
    temperature: o.temperature,
    top_p: o.topP,
    seed,
    onProgress: progressLine,
  })
  if (process.stderr.isTTY) process.stderr.write('\n')
  await reportEval(evaluation, {
    seed,
    run,
    name,
    title: o.title ?? `triad eval ${checkpoint}`,
    source: { checkpoint },
    step,
    k,
    json: o.json,
  })
}

/** Where an evaluation's rows go: the run's `eval/<name>.json` (with `run`) and stdout. */
interface EvalReport {
  run: RunDir | undefined
  name: string
  title: string
  /** What was evaluated: `{ checkpoint }`, or `{ policy, model }` for a served model. */
  source: { checkpoint: string } | { policy: string; model: string }
  step: number | undefined
  k: number
  /** Base sampling seed of the episodes. */
  seed: number
  json: boolean | undefined
}

/**
 * Writes the rows into the run's `eval/<name>.json` when there is a run, then prints them: with
 * `json` the same object as that file holds (`EvalResult`: `title`, `checkpoint`, `step`, `k`,
 * `time`, `seed`, `instances` with every instance's result, `rows`), plus `policy` and `model` for
 * a served model; else as a table with standard errors.
 * @throws CliError when the eval file was written meanwhile by another process.
 */
async function reportEval(evaluation: Evaluation, r: EvalReport): Promise<void> {
  const { run, name, step, k, seed } = r
  const { rows, instances } = evaluation
  // One vocabulary: the run's eval/*.json files, `--json` and `triad report` name every field alike.
  const result: EvalResult = {
    title: r.title,
    ...('checkpoint' in r.source ? { checkpoint: r.source.checkpoint } : {}),
    ...(step === undefined ? {} : { step }),
    k,
    time: Date.now(),
    seed,
    instances,
    rows,
  }
  if (run) {
    const file = await writeEvalResult(run, name, result).catch((err: unknown) => {
      // Written meanwhile by another process: the same one line as the check up front.
      if (err instanceof RunFileExistsError) throw new CliError(err.message, { cause: err })
      throw err
    })
    process.stderr.write(`written to ${file}\n`)
  }
  if (r.json) {
    const served = 'policy' in r.source ? { policy: r.source.policy, model: r.source.model } : {}
    process.stdout.write(`${JSON.stringify({ ...result, ...served }, null, 2)}\n`)
    return
  }
  const table = new Table({
    head: ['task', 'difficulty', 'n', `avg@${k}`, `pass@${k}`, 'reward', 'turns'],
    style: { head: [], border: [], compact: true },
  })
  for (const row of rows)
    table.push([
      row.task,
      row.difficulty,
      row.n,
      `${row.avg_at_k.toFixed(3)} ± ${row.avg_at_k_se.toFixed(3)}`,
      `${row.pass_at_k.toFixed(3)} ± ${row.pass_at_k_se.toFixed(3)}`,
      row.reward.toFixed(3),
      row.turns.toFixed(1),
    ])
  process.stdout.write(`${table.toString()}\n`)
}

/**
 * The run directory of `--run` opened, and the eval file's name checked not to exist yet (results
 * are never overwritten; checked before the evaluation, which takes minutes).
 * @throws CliError for a run that cannot be opened or a `--name` whose file exists.
 */
async function evalTarget(o: EvalOptions): Promise<{ run: RunDir | undefined; name: string }> {
  const run = o.run
    ? (
        await openRunDir(runDirOf(o.run, o.runsDir)).catch((err: Error) => {
          throw new CliError(err.message, { cause: err })
        })
      ).dir
    : undefined
  const name = o.name ?? `eval-${Date.now()}`
  if (run && o.name !== undefined && existsSync(evalResultFile(run, name)))
    throw new CliError(
      `--name ${name}: ${evalResultFile(run, name)} already exists; triad never overwrites a run's files (pick another --name)`,
    )
  return { run, name }
}

/**
 * `triad eval --policy openai:URL --model NAME`: avg@k and pass@k of a model behind an
 * OpenAI-compatible endpoint on the held-out split, the same instances and statistics as for a
 * checkpoint; sample j of instance i sends seed `seed + 1009 i + 7919 j`. The endpoint (one chat
 * completion with the first task's tools) and the tasks' code sandbox are checked first.
 * @throws UsageError with a checkpoint argument too or with `--backend`; CliError for an endpoint
 *   or sandbox that fails its start check, and for an endpoint that fails during the evaluation.
 */
async function runServedEval(path: string | undefined, o: EvalOptions): Promise<void> {
  const url = openAIPolicyUrl(o.policy!)
  if (path !== undefined)
    throw new UsageError(`give a checkpoint (${path}) or --policy ${o.policy}, not both`)
  if (o.backend !== undefined)
    throw new UsageError('--backend sets the tensor backend of a checkpoint; a served model has none')
  if ((o.name !== undefined || o.step !== undefined || o.title !== undefined) && !o.run)
    throw new UsageError('--name, --step and --title describe the file written with --run: give --run too')
  const tasks = parseTasks(o.tasks ?? EVAL_DEFAULTS.tasks, o.difficulty)
  const k = o.k ?? EVAL_DEFAULTS.k
  const instances = o.instances ?? EVAL_DEFAULTS.instances
  const model = o.model ?? 'default'
  const target = await evalTarget(o)
  const policy: OpenAIPolicyOptions = {
    url,
    model,
    apiKey: process.env.OPENAI_API_KEY,
    temperature: o.temperature,
    maxTokens: o.maxNewTokens ?? SERVED_MAX_NEW_TOKENS,
    ...(o.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }),
  }
  await checkPolicyEndpoint(policy, getTask(tasks[0]!.name).tools).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
  })
  await checkSandboxesOf(tasks.map((t) => t.name)).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
  })
  const seed = o.seed ?? EVAL_DEFAULTS.seed
  let evaluation: Evaluation
  try {
    evaluation = await evaluateEpisodes(
      { tasks, k, instances, onProgress: progressLine },
      (_task, index, sample) =>
        new OpenAIPolicy({ ...policy, seed: episodeSeeds.evaluation(seed, index, sample) }),
      o.concurrency ?? 8,
    )
  } catch (err) {
    if (err instanceof PolicyEndpointError)
      throw new CliError(`${err.message} (during the evaluation)`, { cause: err })
    throw err
  } finally {
    if (process.stderr.isTTY) process.stderr.write('\n')
  }
  await reportEval(evaluation, {
    ...target,
    seed,
    title: o.title ?? `triad eval ${o.policy} (model ${model})`,
    source: { policy: o.policy!, model },
    step: o.step,
    k,
    json: o.json,
  })
}

/** `eval done/total episodes` on a terminal, over itself. */
function progressLine(done: number, total: number): void {
  if (process.stderr.isTTY) process.stderr.write(`\reval ${done}/${total} episodes`)
}

export function registerEval(program: Command): void {
  program
    .command('eval')
    .description('avg@k and pass@k per task on the held-out split, with standard errors')
    .argument(
      '[checkpoint]',
      "a checkpoint directory (model.safetensors, config.json, tokenizer.json), or a run directory for its latest checkpoint, evaluated with the run's settings",
    )
    .option(
      '--tasks <names>',
      `comma-separated tasks, each optionally with its level (calc:2) (default: a run directory's tasks at their starting levels, else "${EVAL_DEFAULTS.tasks}")`,
    )
    .option(
      '--k <n>',
      `samples per instance (default: a run directory's evaluation.k, else ${EVAL_DEFAULTS.k})`,
      integerOption({ min: 1 }),
    )
    .option(
      '--instances <n>',
      `held-out instances per task (default: a run directory's evaluation.instancesPerTask, else ${EVAL_DEFAULTS.instances})`,
      integerOption({ min: 1 }),
    )
    .option(
      '--difficulty <level>',
      "level of each task without one in --tasks (default: each task's default; a run directory's tasks: their starting levels)",
      integerOption(),
    )
    .option(
      '--max-new-tokens <n>',
      `most tokens per turn (default: a run directory's pipeline.maxNewTokens, else ${EVAL_DEFAULTS.maxNewTokens})`,
      integerOption({ min: 1 }),
    )
    .option('--temperature <t>', 'sampling temperature', numberOption({ min: 0 }), 1)
    .option('--top-p <p>', 'nucleus sampling mass (1: off)', numberOption({ min: 0, max: 1 }), 1)
    .option(
      '--seed <n>',
      `base sampling seed (default: a run directory's evaluation seed, else ${EVAL_DEFAULTS.seed})`,
      integerOption({ min: 0 }),
    )
    .option('--run <id>', "also write the table into this run's eval/ (the run directory's name)")
    .option('--runs-dir <dir>', 'with --run: the folder that holds the run directory', 'runs')
    .option('--name <name>', 'with --run: the file name, eval/<name>.json (default eval-<time>)')
    .option('--step <n>', 'with --run: the learner step of the evaluated weights', integerOption({ min: 0 }))
    .option('--title <title>', 'with --run: the heading of the table')
    .option('--backend <name>', 'tensor backend to force (wasm, cpu, tensorflow...)')
    .option(
      '--policy <openai:URL>',
      'evaluate the model behind an OpenAI-compatible endpoint instead of a checkpoint (OPENAI_API_KEY is sent when set)',
    )
    .option('--model <name>', 'with --policy: the model name sent to the endpoint (default "default")')
    .option(
      '--concurrency <n>',
      'with --policy: episodes played at once (default 8)',
      integerOption({ min: 1 }),
    )
    .option(
      '--timeout-ms <ms>',
      'with --policy: deadline of one request (default 60000)',
      integerOption({ min: 1 }),
    )
    .option('--json', 'print JSON')
    .action(async (path: string | undefined, o: EvalOptions) => runEval(path, o))
}
