import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Table from 'cli-table3'
import type { Command } from 'commander'
import {
  type AnyTask,
  evalResultFile,
  evaluatePolicy,
  getTask,
  latestRunCheckpoint,
  openRunDir,
  RunFileExistsError,
  runDirPaths,
  writeEvalResult,
} from '../../actors/index.ts'
import { CheckpointError, chooseBackend, loadCheckpoint } from '../../gpu/index.ts'
import { CliError } from '../errors.ts'
import { integerOption, numberOption } from '../numeric-option.ts'

/** Options of `triad eval` (numbers already parsed and bounded by commander). */
export interface EvalOptions {
  tasks: string
  /** Samples per instance, >= 1. */
  k: number
  /** Held-out instances per task, >= 1. */
  instances: number
  /** Level of every task without its own level in `tasks`. */
  difficulty?: number
  maxNewTokens: number
  temperature: number
  seed: number
  run?: string
  /** With `run`: the eval file's name (`eval/<name>.json`; default `eval-<time>`). */
  name?: string
  /** With `run`: the learner step of the evaluated weights, recorded in the file. */
  step?: number
  /** With `run`: the table's heading. */
  title?: string
  /** Tensor backend to force (default: the best available). */
  backend?: string
  json?: boolean
}

/**
 * The checkpoint directory `triad eval` evaluates for its argument: a checkpoint directory (it
 * holds `config.json`) as it is; a run directory (it holds `recipe.json`) stands for its newest
 * checkpoint (`latestRunCheckpoint`), and a line on stderr says which.
 * @throws CliError for a run without checkpoints, and for a path that is neither, with an example
 *   of a checkpoint path.
 */
export function resolveEvalCheckpoint(path: string, log: (line: string) => void = () => {}): string {
  if (existsSync(join(path, 'config.json'))) return path
  const run = runDirPaths(path)
  if (existsSync(run.recipeFile)) {
    const latest = latestRunCheckpoint(path)
    if (!latest)
      throw new CliError(
        `${path} is a run directory without a checkpoint yet (${run.checkpointsDir} holds no step-N/ or sft/ with a config.json)`,
      )
    log(
      `${path} is a run directory: evaluating its latest checkpoint ${latest.dir} (${latest.name === 'sft' ? 'the cold-start SFT' : `learner step ${latest.step}`})`,
    )
    return latest.dir
  }
  throw new CliError(
    `${path} is neither a checkpoint (no config.json) nor a run directory (no recipe.json): pass a checkpoint such as runs/<run>/checkpoints/step-50, or a run directory to evaluate its latest checkpoint`,
  )
}

/**
 * A task level checked against the task's levels.
 * @throws CliError naming where the level came from (`--tasks calc:9`, `--difficulty`).
 */
function checkLevel(task: AnyTask, level: number, where: string): number {
  const { min, max } = task.difficulty
  if (level < min || level > max)
    throw new CliError(
      `${where}: difficulty ${level} is invalid: task '${task.name}' has levels ${min}..${max}`,
    )
  return level
}

/**
 * `triad eval CHECKPOINT`: avg@k and pass@k (with standard errors) per task on the held-out
 * split, k samples of each of `--instances` eval instances. `CHECKPOINT` may be a run directory,
 * which stands for its latest checkpoint. With `--run`, the table also goes to the run's
 * `eval/<name>.json` (the periodic evaluation of `triad run` uses this).
 * @throws CliError for a checkpoint that cannot be loaded, an unknown task or a bad level, and,
 *   before anything is evaluated, for a `--name` whose `eval/<name>.json` exists already.
 */
export async function runEval(path: string, o: EvalOptions): Promise<void> {
  const { k, instances } = o
  const tasks = o.tasks.split(',').map((entry) => {
    const [name = '', level] = entry.trim().split(':')
    let task: AnyTask
    try {
      task = getTask(name)
    } catch (err) {
      throw new CliError((err as Error).message, { cause: err })
    }
    if (level !== undefined) {
      if (!/^\d+$/.test(level))
        throw new CliError(`--tasks ${entry.trim()}: the level after ':' must be an integer, got '${level}'`)
      return { name, difficulty: checkLevel(task, Number(level), `--tasks ${entry.trim()}`) }
    }
    if (o.difficulty === undefined) return { name, difficulty: undefined }
    return { name, difficulty: checkLevel(task, o.difficulty, `--difficulty ${o.difficulty}`) }
  })
  if ((o.name !== undefined || o.step !== undefined || o.title !== undefined) && !o.run)
    throw new CliError('--name, --step and --title describe the file written with --run: give --run too')
  if (o.name !== undefined && !/^[A-Za-z0-9._-]+$/.test(o.name))
    throw new CliError(`--name must be a file name of letters, digits, '.', '_' and '-', got '${o.name}'`)
  const step = o.step
  const checkpoint = resolveEvalCheckpoint(path, (line) => process.stderr.write(`${line}\n`))
  const run = o.run
    ? (
        await openRunDir(o.run).catch((err: Error) => {
          throw new CliError(err.message, { cause: err })
        })
      ).dir
    : undefined
  // Before the evaluation, which takes minutes: results are never overwritten.
  const name = o.name ?? `eval-${Date.now()}`
  if (run && o.name !== undefined && existsSync(evalResultFile(run, name)))
    throw new CliError(
      `--name ${name}: ${evalResultFile(run, name)} already exists; triad never overwrites a run's files (pick another --name)`,
    )
  await chooseBackend({ backend: o.backend, log: (line) => process.stderr.write(`${line}\n`) })
  let loaded: Awaited<ReturnType<typeof loadCheckpoint>>
  try {
    loaded = await loadCheckpoint(checkpoint)
  } catch (err) {
    if (err instanceof CheckpointError)
      throw new CliError(`cannot load checkpoint: ${err.message}`, { cause: err })
    throw err
  }
  const rows = await evaluatePolicy(loaded.model, loaded.tokenizer, {
    tasks,
    k,
    instances,
    maxNewTokens: o.maxNewTokens,
    temperature: o.temperature,
    seed: o.seed,
    onProgress: (done, total) => {
      if (process.stderr.isTTY) process.stderr.write(`\reval ${done}/${total} episodes`)
    },
  })
  if (process.stderr.isTTY) process.stderr.write('\n')
  if (run) {
    const file = await writeEvalResult(run, name, {
      title: o.title ?? `triad eval ${checkpoint}`,
      checkpoint,
      ...(step === undefined ? {} : { step }),
      k,
      time: Date.now(),
      rows,
    }).catch((err: unknown) => {
      // Written meanwhile by another process: the same one line as the check up front.
      if (err instanceof RunFileExistsError) throw new CliError(err.message, { cause: err })
      throw err
    })
    process.stderr.write(`written to ${file}\n`)
  }
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ checkpoint, k, instances, rows }, null, 2)}\n`)
    return
  }
  const table = new Table({
    head: ['task', 'difficulty', 'n', `avg@${k}`, `pass@${k}`, 'reward', 'turns'],
    style: { head: [], border: [], compact: true },
  })
  for (const r of rows)
    table.push([
      r.task,
      r.difficulty,
      r.n,
      `${r.avg_at_k.toFixed(3)} ± ${r.avg_at_k_se.toFixed(3)}`,
      `${r.pass_at_k.toFixed(3)} ± ${r.pass_at_k_se.toFixed(3)}`,
      r.reward.toFixed(3),
      r.turns.toFixed(1),
    ])
  process.stdout.write(`${table.toString()}\n`)
}

export function registerEval(program: Command): void {
  program
    .command('eval')
    .description('avg@k and pass@k per task on the held-out split, with standard errors')
    .argument(
      '<checkpoint>',
      'a checkpoint directory (model.safetensors, config.json, tokenizer.json), or a run directory for its latest checkpoint',
    )
    .option(
      '--tasks <names>',
      'comma-separated tasks, each optionally with its level (calc:2)',
      'calc,sql,maze',
    )
    .option('--k <n>', 'samples per instance', integerOption({ min: 1 }), 8)
    .option('--instances <n>', 'held-out instances per task', integerOption({ min: 1 }), 16)
    .option('--difficulty <level>', "difficulty level (default: each task's default)", integerOption())
    .option('--max-new-tokens <n>', 'most tokens per turn', integerOption({ min: 1 }), 96)
    .option('--temperature <t>', 'sampling temperature', numberOption({ min: 0 }), 1)
    .option('--seed <n>', 'sampling seed', integerOption({ min: 0 }), 0)
    .option('--run <dir>', 'also write the table into this run directory (eval/)')
    .option('--name <name>', 'with --run: the file name, eval/<name>.json (default eval-<time>)')
    .option('--step <n>', 'with --run: the learner step of the evaluated weights', integerOption({ min: 0 }))
    .option('--title <title>', 'with --run: the heading of the table')
    .option('--backend <name>', 'tensor backend to force (wasm, cpu, tensorflow...)')
    .option('--json', 'print JSON')
    .action(async (path: string, o: EvalOptions) => runEval(path, o))
}
