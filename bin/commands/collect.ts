import { rename } from 'node:fs/promises'
import cliProgress from 'cli-progress'
import type { Command } from 'commander'
import {
  type AnyTask,
  checkPolicyEndpoint,
  checkSandboxesOf,
  getTask,
  OpenAIPolicy,
  type OpenAIPolicyOptions,
  playBounded,
  playEpisode,
} from '../../actors/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { integerOption, numberOption } from '../numeric-option.ts'
import { openAIPolicyUrl } from '../policy-option.ts'
import { parseTasks } from '../task-list.ts'
import { COLLECTED_COLUMNS, type CollectedRow, collectedRow } from '../trajectories/collected-rows.ts'
import { outFileFormat, writeRowsFile } from '../trajectories/trajectory-file.ts'

/** Options of `triad collect` (numbers already parsed and bounded by commander). */
export interface CollectOptions {
  /** `openai:URL`. */
  policy?: string
  model: string
  /** Comma-separated task names, each optionally with its level (`calc:2,sql`). */
  tasks: string
  /** Level of every task without its own level in `tasks`. */
  difficulty?: number
  /** Episodes per task, >= 1. */
  episodes: number
  /** Instance index of each task's first episode (the next ones follow it). */
  firstIndex: number
  split: string
  temperature: number
  /** Most new tokens per assistant turn (the request's `max_tokens`). */
  maxTokens: number
  /** Episodes played at once. */
  concurrency: number
  /** Deadline of one request, ms. */
  timeoutMs: number
  /** Base of the `seed` sent with each request; absent: no seed is sent. */
  seed?: number
  /** Keep only the episodes whose outcome reward is positive. */
  solvedOnly?: boolean
  out?: string
  format?: string
}

/** What `runCollect` played and wrote. */
export interface CollectSummary {
  /** Episodes played to their end. */
  played: number
  /** Rows written (all played ones, or the solved ones with `solvedOnly`). */
  written: number
  /** Per task: episodes played and solved. */
  perTask: Record<string, { played: number; solved: number }>
}

/**
 * `triad collect`: plays `episodes` instances (indices `firstIndex`.. of `split`) of each task with
 * a model behind an OpenAI-compatible endpoint and writes one row per episode (`CollectedRow`:
 * OpenAI messages and tools, reward, status, metrics) as JSONL or parquet, the dataset
 * `sft.datasets` reads. Each episode is kept whole: the model's invalid actions and failed tool
 * calls and what it did after them. The endpoint (one chat completion) and the tasks' code sandbox
 * are checked before any episode, so a wrong URL or model fails at once; an endpoint that fails
 * later stops the collection, and the episodes finished by then are still written.
 * @throws UsageError for a bad `--policy`, `--split`, `--out` or task list; CliError for an
 *   endpoint or sandbox that fails its start check, and for an endpoint that fails mid-way (after
 *   writing the finished episodes).
 */
export async function runCollect(o: CollectOptions): Promise<CollectSummary> {
  if (!o.policy)
    throw new UsageError('--policy openai:URL is required (the endpoint that plays the episodes)')
  const url = openAIPolicyUrl(o.policy)
  if (!o.out) throw new UsageError('--out FILE is required (FILE.jsonl or FILE.parquet)')
  const format = outFileFormat(o.out, o.format)
  if (o.split !== 'train' && o.split !== 'eval') throw new UsageError(`--split ${o.split}: use train or eval`)
  const split = o.split
  const choices = parseTasks(o.tasks, o.difficulty)
  const tasks = choices.map((c) => {
    const task: AnyTask = getTask(c.name)
    return { task, difficulty: c.difficulty ?? task.difficulty.default }
  })
  const policyOptions: OpenAIPolicyOptions = {
    url,
    model: o.model,
    apiKey: process.env.OPENAI_API_KEY,
    temperature: o.temperature,
    maxTokens: o.maxTokens,
    timeoutMs: o.timeoutMs,
  }
  // Before any episode: the endpoint, with the first task's tools, and the tasks' code sandbox.
  await checkPolicyEndpoint(policyOptions, tasks[0]!.task.tools).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
  })
  await checkSandboxesOf(tasks.map((t) => t.task.name)).catch((err: Error) => {
    throw new CliError(err.message, { cause: err })
  })
  const jobs = tasks.flatMap(({ task, difficulty }) =>
    Array.from({ length: o.episodes }, (_, i) => ({ task, difficulty, index: o.firstIndex + i })),
  )
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: 'collect [{bar}] {value}/{total} episodes | solved {solved} | {eta_formatted} left',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined
  const perTask: CollectSummary['perTask'] = Object.fromEntries(
    tasks.map((t) => [t.task.name, { played: 0, solved: 0 }]),
  )
  const finished: { at: number; row: CollectedRow }[] = []
  let solved = 0
  bar?.start(jobs.length, 0, { solved: 0 })
  let failure: unknown
  try {
    await playBounded(jobs, o.concurrency, async (job, at) => {
      const policy = new OpenAIPolicy({
        ...policyOptions,
        ...(o.seed === undefined ? {} : { seed: o.seed + at * 1_009 }),
      })
      const t = await playEpisode(job.task, { index: job.index, difficulty: job.difficulty, split }, policy)
      const count = perTask[job.task.name]!
      count.played++
      if (t.reward > 0) {
        count.solved++
        solved++
      }
      finished.push({ at, row: collectedRow(o.policy!, o.model, job.index, t) })
      bar?.increment(1, { solved })
    })
  } catch (err) {
    failure = err
  } finally {
    bar?.stop()
    await Promise.all(
      tasks.map(async ({ task }) => {
        await (task as { pool?: () => { shutdown(): Promise<void> } }).pool?.().shutdown()
        await (task as { close?: () => Promise<void> }).close?.()
      }),
    )
  }
  const rows = finished
    .sort((a, b) => a.at - b.at)
    .map((f) => f.row)
    .filter((r) => !o.solvedOnly || r.reward > 0)
  // Written whole or not at all: a temporary file renamed at the end.
  if (rows.length > 0) {
    const part = `${o.out}.part`
    writeRowsFile(part, format, COLLECTED_COLUMNS, rows)
    await rename(part, o.out)
  }
  if (failure !== undefined)
    throw new CliError(
      `${(failure as Error).message}; stopped after ${finished.length} of ${jobs.length} episodes${rows.length ? `, the ${rows.length} finished written to ${o.out}` : ', nothing written'}`,
      { cause: failure },
    )
  const counts = Object.entries(perTask)
    .map(([name, c]) => `${name} ${c.solved}/${c.played}`)
    .join(', ')
  if (rows.length === 0)
    throw new CliError(
      `no episode was solved (solved per task: ${counts}): --solved-only leaves nothing to write; ${o.out} not written`,
    )
  process.stderr.write(`wrote ${rows.length} episodes to ${o.out} (solved per task: ${counts})\n`)
  return { played: finished.length, written: rows.length, perTask }
}

/** `triad collect --policy openai:URL --model NAME --tasks ... --episodes N --out FILE`. */
export function registerCollect(program: Command): void {
  program
    .command('collect')
    .description(
      'play the tasks with a model behind an OpenAI-compatible endpoint and write the episodes as an SFT dataset (JSONL or parquet)',
    )
    .option(
      '--policy <openai:URL>',
      'the endpoint, e.g. openai:http://127.0.0.1:8000/v1 (OPENAI_API_KEY is sent when set)',
    )
    .option('--model <name>', 'model name sent to the endpoint', 'default')
    .option(
      '--tasks <names>',
      'comma-separated tasks, each optionally with its level (calc:2)',
      'calc,sql,code',
    )
    .option(
      '--difficulty <level>',
      "level of each task without one in --tasks (default: the task's default)",
      integerOption(),
    )
    .option(
      '--episodes <n>',
      'episodes per task (instances --first-index, --first-index + 1, ...)',
      integerOption({ min: 1 }),
      16,
    )
    .option('--first-index <n>', "instance index of each task's first episode", integerOption({ min: 0 }), 0)
    .option('--split <split>', 'train | eval: the instances to play', 'train')
    .option('--temperature <t>', 'sampling temperature', numberOption({ min: 0 }), 1)
    .option('--max-tokens <n>', 'most new tokens per assistant turn', integerOption({ min: 1 }), 1024)
    .option('--concurrency <n>', 'episodes played at once', integerOption({ min: 1 }), 8)
    .option('--timeout-ms <ms>', 'deadline of one request', integerOption({ min: 1 }), 120_000)
    .option(
      '--seed <n>',
      'send seed (this plus a per-request offset) for endpoints that sample reproducibly',
      integerOption({ min: 0 }),
    )
    .option('--solved-only', 'write only the episodes with a positive reward')
    .option('--out <file>', 'the file to write: FILE.jsonl or FILE.parquet')
    .option('--format <format>', 'jsonl or parquet (default: from the extension of --out)')
    .action(async (o: CollectOptions) => {
      await runCollect(o)
    })
}
