import Table from 'cli-table3'
import type { Command } from 'commander'
import Docker from 'dockerode'
import {
  type AnyTask,
  ContainerExec,
  ContainerManager,
  checkTaskSandboxes,
  connectNats,
  formatTrajectory,
  getTask,
  isTaskFilePath,
  loadTaskFile,
  lookupTask,
  ModelPolicy,
  OpenAIPolicy,
  type PlayedEpisode,
  type Policy,
  playEpisode,
  playExpert,
  startEnvController,
  startEnvWorker,
  systemClock,
  taskRegistry,
  tasks,
} from '../../actors/index.ts'
import { ContinuousBatcher, chooseBackend, disposeTransformer } from '../../gpu/index.ts'
import {
  EnvCancelAll,
  EnvDrain,
  type Envelope,
  EnvList,
  type EnvWorkers,
  type PayloadOf,
  Subjects,
} from '../../protocols/index.ts'
import { resolveCheckpointPath } from '../checkpoint-path.ts'
import { CliError, UsageError } from '../errors.ts'
import { loadModelDir } from '../model-dir.ts'
import { integerOption, numberOption } from '../numeric-option.ts'
import type { RoleContext, RoleHandle } from '../worker/role.ts'
import { runWorker } from '../worker/run-worker.ts'

/**
 * `triad env ...`: run an env worker or the controller, try a task with a policy, and the
 * controller's admin requests (list, drain, cancel-all).
 */

const num = (v: unknown, fallback: number): number => (v === undefined ? fallback : Number(v))

/** The `env` worker role: an env worker serving `--tasks` (default all built-in tasks). */
export async function startEnvRole(ctx: RoleContext): Promise<RoleHandle> {
  const names = typeof ctx.options.tasks === 'string' ? ctx.options.tasks.split(',') : Object.keys(tasks)
  let chosen: ReturnType<typeof taskRegistry>
  try {
    chosen = taskRegistry(names.map((n) => lookupTask(tasks, n.trim())))
  } catch (e) {
    throw new CliError((e as Error).message, { cause: e })
  }
  const worker = await startEnvWorker(ctx.system, ctx.transport, {
    run: ctx.run,
    id: ctx.id,
    tasks: chosen,
    capacity: num(ctx.options.capacity, 64),
    heartbeatMs: num(ctx.options.heartbeatMs, 1000),
    idleTimeoutMs: num(ctx.options.idleMs, 600_000),
    seed: num(ctx.options.seed, 0),
    containers: ctx.options.docker ? new ContainerExec(new Docker()) : undefined,
  })
  return { stop: () => worker.stop() }
}

/** The `env-controller` role: the controller, with containers when `--docker` is given. */
export async function startEnvControllerRole(ctx: RoleContext): Promise<RoleHandle> {
  const containers = ctx.options.docker
    ? new ContainerManager({ docker: new Docker(), run: ctx.run, clock: systemClock })
    : undefined
  const controller = await startEnvController(ctx.system, ctx.transport, {
    run: ctx.run,
    tasks,
    containers,
    checkMs: num(ctx.options.checkMs, 250),
  })
  return { stop: () => controller.stop() }
}

/** Sends one admin request to the controller and prints the reply. */
/**
 * The controller's `env.list` answer as a table for a terminal: one row per worker (state,
 * sessions active of capacity, seconds since its heartbeat, tasks), then the controller's counters
 * on one line.
 */
export function formatEnvWorkers(reply: PayloadOf<typeof EnvWorkers>): string {
  const lines: string[] = []
  if (reply.workers.length === 0) lines.push('no env workers registered with the controller')
  else {
    const table = new Table({
      head: ['worker', 'state', 'active', 'capacity', 'last seen', 'tasks'],
      style: { head: [], border: [], compact: true },
    })
    for (const w of reply.workers)
      table.push([
        w.worker,
        w.state,
        w.active,
        w.capacity,
        `${(w.last_seen_ms / 1000).toFixed(1)} s`,
        w.tasks.join(','),
      ])
    lines.push(table.toString())
  }
  const counts = Object.entries(reply.counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`)
  if (counts.length) lines.push(`counts: ${counts.join(', ')}`)
  return `${lines.join('\n')}\n`
}

async function admin(
  options: { nats: string; run: string; json?: boolean },
  message: Envelope,
  format?: (payload: never) => string,
): Promise<void> {
  const transport = await connectNats({
    servers: options.nats,
    run: options.run,
    role: 'cli',
    id: `env-${process.pid}`,
  })
  try {
    const reply = await transport.request(Subjects.envAdmin(options.run), message, { timeoutMs: 10_000 })
    process.stdout.write(
      format && !options.json
        ? format(reply.payload as never)
        : `${JSON.stringify(reply.payload, null, 2)}\n`,
    )
  } finally {
    await transport.close()
  }
}

/** Options of `triad env try` (numbers already parsed and bounded by commander). */
export interface TryOptions {
  policy: string
  model: string
  seed: number
  /** model:DIR: most tokens per turn. */
  maxNewTokens: number
  /** model:DIR: sampling temperature (0: greedy). */
  temperature: number
  /** model:DIR: cap on the context allocated (default the model's). */
  contextLength?: number
  backend?: string
  /** Absent: the task's default level. */
  difficulty?: number
  split: string
  errorRate: number
  json?: boolean
}

/**
 * The level of `--difficulty` checked against the task's levels (undefined when absent).
 * @throws CliError naming the option, the value and the task's levels, e.g. "option
 *   '--difficulty <d>' argument '99' is invalid: task 'calc' has levels 1..7".
 */
export function tryDifficulty(task: AnyTask, difficulty: number | undefined): number | undefined {
  if (difficulty === undefined) return undefined
  const { min, max } = task.difficulty
  if (difficulty < min || difficulty > max)
    throw new UsageError(
      `option '--difficulty <d>' argument '${difficulty}' is invalid: task '${task.name}' has levels ${min}..${max}`,
    )
  return difficulty
}

/**
 * The policy of `--policy model:DIR`: the model of a triad checkpoint, a checkpoint of LoRA adapters,
 * a Hugging Face directory or a run directory's newest checkpoint (`loadModelDir`), sampling through
 * a continuous batcher with the model's own chat template and tool-call format.
 * @returns the policy and what frees it.
 */
async function modelPolicy(
  path: string,
  o: TryOptions,
): Promise<{ policy: Policy; close: () => Promise<void> }> {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const dir = resolveCheckpointPath(path, { what: 'a model directory', doing: 'playing', todo: 'play' }, log)
  await chooseBackend({ backend: o.backend, log })
  const { model, format } = await loadModelDir(dir, o.contextLength)
  const batcher = new ContinuousBatcher(model, { maxBatch: 1 })
  const policy = new ModelPolicy(batcher, format, model.config.contextLength, {
    maxNewTokens: o.maxNewTokens,
    temperature: o.temperature,
    top_p: 1,
    seed: o.seed,
  })
  return {
    policy,
    close: async () => {
      await batcher.close()
      disposeTransformer(model)
    },
  }
}

/**
 * `triad env try`: plays one episode of a built-in task, or of the task of a file (a path, or a
 * name ending in `.ts`/`.js`), with the expert, an OpenAI-compatible endpoint or a model directory
 * (`model:DIR`), and prints it.
 */
async function tryTask(name: string, o: TryOptions): Promise<void> {
  let task: AnyTask
  try {
    task = isTaskFilePath(name) ? await loadTaskFile(name) : getTask(name)
  } catch (e) {
    throw new CliError((e as Error).message, { cause: e })
  }
  if (o.split !== 'train' && o.split !== 'eval')
    throw new UsageError(`option '--split <split>' argument '${o.split}' is invalid: use train or eval`)
  // The sandbox first: an episode would only end in task_error at its first tool call.
  await checkTaskSandboxes([task]).catch((e: Error) => {
    throw new CliError(e.message, { cause: e })
  })
  const policy = o.policy
  const request = {
    seed: o.seed,
    difficulty: tryDifficulty(task, o.difficulty),
    split: o.split as 'train' | 'eval',
  }
  let t: PlayedEpisode
  let close: (() => Promise<void>) | undefined
  try {
    if (policy === 'expert')
      t = await playExpert(task, request, {
        errorRate: o.errorRate,
        successRate: 1,
        seed: request.seed,
      })
    else if (policy.startsWith('openai:'))
      t = await playEpisode(
        task,
        request,
        new OpenAIPolicy({
          url: policy.slice('openai:'.length),
          model: o.model,
          apiKey: process.env.OPENAI_API_KEY,
        }),
      )
    else if (policy.startsWith('model:')) {
      const m = await modelPolicy(policy.slice('model:'.length), o)
      close = m.close
      t = await playEpisode(task, request, m.policy)
    } else throw new UsageError(`unknown policy '${policy}'; use expert, openai:URL or model:DIR`)
  } catch (e) {
    if (e instanceof CliError) throw e
    throw new CliError((e as Error).message, { cause: e })
  } finally {
    await close?.()
    await (task as { pool?: () => { shutdown(): Promise<void> } }).pool?.().shutdown()
    await (task as { close?: () => Promise<void> }).close?.()
  }
  process.stdout.write(o.json ? `${JSON.stringify(t, null, 2)}\n` : `${formatTrajectory(t)}\n`)
}

export function registerEnv(program: Command): void {
  const env = program.command('env').description('environments: workers, controller, trying tasks')
  const common = (c: Command) =>
    c
      .option('--nats <url>', 'NATS server URL(s), comma separated', 'nats://127.0.0.1:4222')
      .option('--run <id>', 'run id (subjects are triad.<run>.*)', 'default')
  common(env.command('worker').description('serve sessions of built-in tasks'))
    .option('--id <id>', 'worker id (default: host-pid)')
    .option('--tasks <names>', `comma-separated task names (${Object.keys(tasks).join(', ')})`)
    .option('--capacity <n>', 'most sessions at once', integerOption({ min: 1 }), 64)
    .option('--heartbeat-ms <ms>', 'heartbeat period', integerOption({ min: 1 }), 1000)
    .option('--idle-ms <ms>', 'idle session expiry', integerOption({ min: 1 }), 600_000)
    .option('--seed <n>', 'seed for random instances', integerOption({ min: 0 }), 0)
    .option('--docker', 'run commands in session containers (tasks that declare an image)')
    .action((o: { id?: string; nats: string; run: string }) => runWorker('env', o, { env: startEnvRole }))
  common(env.command('controller').description('route sessions to env workers; containers with --docker'))
    .option('--id <id>', 'controller id (default: host-pid)')
    .option('--check-ms <ms>', 'silent-worker check period', integerOption({ min: 1 }), 250)
    .option('--docker', 'make containers for tasks that declare an image')
    .action((o: { id?: string; nats: string; run: string }) =>
      runWorker('env-controller', o, { 'env-controller': startEnvControllerRole }),
    )
  common(env.command('list').description("print the controller's workers and counts"))
    .option('--json', 'print the JSON answer of the controller (for scripts)')
    .action((o: { nats: string; run: string; json?: boolean }) =>
      admin(o, EnvList.make({}), formatEnvWorkers),
    )
  common(env.command('drain').description('give a worker no new sessions').argument('<worker>')).action(
    (worker: string, o: { nats: string; run: string }) => admin(o, EnvDrain.make({ worker })),
  )
  common(env.command('cancel-all').description('cancel every session')).action(
    (o: { nats: string; run: string }) => admin(o, EnvCancelAll.make({})),
  )
  env
    .command('try')
    .description('play one episode of a task and print it')
    .argument(
      '<task>',
      `task name (${Object.keys(tasks).join(', ')}), or a task file (mytasks/echo.ts: its exported task)`,
    )
    .option(
      '--policy <policy>',
      'expert | openai:URL (an OpenAI-compatible endpoint) | model:DIR (a triad checkpoint, Hugging Face directory or run directory)',
      'expert',
    )
    .option('--model <name>', 'model name for an OpenAI-compatible endpoint', 'default')
    .option('--seed <n>', 'instance seed (and model:DIR sampling seed)', integerOption({ min: 0 }), 0)
    .option('--max-new-tokens <n>', 'model:DIR: most tokens per turn', integerOption({ min: 1 }), 256)
    .option('--temperature <t>', 'model:DIR: sampling temperature (0: greedy)', numberOption({ min: 0 }), 1)
    .option(
      '--context-length <n>',
      "model:DIR: cap on the context allocated (default the model's)",
      integerOption({ min: 2 }),
    )
    .option('--backend <name>', 'model:DIR: tensor backend (default: the best available)')
    .option('--difficulty <d>', "difficulty level (the task's default when absent)", integerOption())
    .option('--split <split>', 'train | eval', 'train')
    .option('--error-rate <p>', 'expert: mistakes per step', numberOption({ min: 0, max: 1 }), 0.2)
    .option('--json', 'print the trajectory as JSON')
    .action((name: string, o: TryOptions) => tryTask(name, o))
}
