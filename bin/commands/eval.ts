import Table from 'cli-table3'
import type { Command } from 'commander'
import { evaluatePolicy, getTask, openRunDir, writeEvalResult } from '../../actors/index.ts'
import { CheckpointError, chooseBackend, loadCheckpoint } from '../../gpu/index.ts'
import { CliError } from '../errors.ts'

/** Options of `triad eval`. */
export interface EvalOptions {
  tasks: string
  k: string
  instances: string
  difficulty?: string
  maxNewTokens: string
  temperature: string
  seed: string
  run?: string
  /** With `run`: the eval file's name (`eval/<name>.json`; default `eval-<time>`). */
  name?: string
  /** With `run`: the learner step of the evaluated weights, recorded in the file. */
  step?: string
  /** With `run`: the table's heading. */
  title?: string
  /** Tensor backend to force (default: the best available). */
  backend?: string
  json?: boolean
}

/**
 * `triad eval CHECKPOINT`: avg@k and pass@k (with standard errors) per task on the held-out
 * split, k samples of each of `--instances` eval instances. With `--run`, the table also goes to
 * the run's `eval/<name>.json` (the periodic evaluation of `triad run` uses this).
 * @throws CliError for a checkpoint that cannot be loaded, an unknown task or a bad number.
 */
export async function runEval(checkpoint: string, o: EvalOptions): Promise<void> {
  const num = (name: string, v: string, min: number) => {
    const n = Number(v)
    if (!Number.isFinite(n) || n < min) throw new CliError(`--${name} must be a number >= ${min}, got '${v}'`)
    return n
  }
  const k = num('k', o.k, 1)
  const instances = num('instances', o.instances, 1)
  const tasks = o.tasks.split(',').map((entry) => {
    const [name = '', level] = entry.trim().split(':')
    try {
      getTask(name)
    } catch (err) {
      throw new CliError((err as Error).message, { cause: err })
    }
    const difficulty = level ?? o.difficulty
    return { name, difficulty: difficulty === undefined ? undefined : num('difficulty', difficulty, 0) }
  })
  if ((o.name !== undefined || o.step !== undefined || o.title !== undefined) && !o.run)
    throw new CliError('--name, --step and --title describe the file written with --run: give --run too')
  if (o.name !== undefined && !/^[A-Za-z0-9._-]+$/.test(o.name))
    throw new CliError(`--name must be a file name of letters, digits, '.', '_' and '-', got '${o.name}'`)
  const step = o.step === undefined ? undefined : num('step', o.step, 0)
  if (step !== undefined && !Number.isInteger(step))
    throw new CliError(`--step must be an integer, got '${o.step}'`)
  const run = o.run
    ? (
        await openRunDir(o.run).catch((err: Error) => {
          throw new CliError(err.message, { cause: err })
        })
      ).dir
    : undefined
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
    maxNewTokens: num('max-new-tokens', o.maxNewTokens, 1),
    temperature: num('temperature', o.temperature, 0),
    seed: num('seed', o.seed, 0),
    onProgress: (done, total) => {
      if (process.stderr.isTTY) process.stderr.write(`\reval ${done}/${total} episodes`)
    },
  })
  if (process.stderr.isTTY) process.stderr.write('\n')
  if (run) {
    const file = await writeEvalResult(run, o.name ?? `eval-${Date.now()}`, {
      title: o.title ?? `triad eval ${checkpoint}`,
      checkpoint,
      ...(step === undefined ? {} : { step }),
      k,
      time: Date.now(),
      rows,
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
    .argument('<checkpoint>', 'a checkpoint directory (model.safetensors, config.json, tokenizer.json)')
    .option(
      '--tasks <names>',
      'comma-separated tasks, each optionally with its level (calc:2)',
      'calc,sql,maze',
    )
    .option('--k <n>', 'samples per instance', '8')
    .option('--instances <n>', 'held-out instances per task', '16')
    .option('--difficulty <level>', "difficulty level (default: each task's default)")
    .option('--max-new-tokens <n>', 'most tokens per turn', '96')
    .option('--temperature <t>', 'sampling temperature', '1')
    .option('--seed <n>', 'sampling seed', '0')
    .option('--run <dir>', 'also write the table into this run directory (eval/)')
    .option('--name <name>', 'with --run: the file name, eval/<name>.json (default eval-<time>)')
    .option('--step <n>', 'with --run: the learner step of the evaluated weights')
    .option('--title <title>', 'with --run: the heading of the table')
    .option('--backend <name>', 'tensor backend to force (wasm, cpu, tensorflow...)')
    .option('--json', 'print JSON')
    .action(async (checkpoint: string, o: EvalOptions) => runEval(checkpoint, o))
}
