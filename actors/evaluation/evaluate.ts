import {
  avgAtK,
  type ChatFormat,
  ContinuousBatcher,
  passAtKOver,
  type Tokenizer,
  type Transformer,
} from '../../gpu/index.ts'
import { getTask, type Policy, playEpisode } from '../environment/index.ts'
import type { AgentTaskSpec, McpTaskSpec } from '../rollout/index.ts'
import { episodeSeeds } from '../runtime/index.ts'
import { agenticInstanceCount, type EvalOutcome, playAgenticTasks } from './agent-evaluation.ts'
import { playBounded } from './bounded-play.ts'
import { ModelPolicy } from './model-policy.ts'

/**
 * A task of an evaluation: a built-in task of the environment registry at a level, or an agent or
 * MCP task with its spec, whose `instances` are its held-out instances (the recipe's
 * `evalInstances`; docs/gateway.md#held-out-evaluation).
 */
export interface EvaluationTask {
  name: string
  /** The level (the task's default when absent; an agent or MCP task has the one level 1). */
  difficulty?: number
  /** An agent task: the program and its held-out instances. */
  agent?: AgentTaskSpec
  /** An MCP task: the servers, the reward and its held-out instances. */
  mcp?: McpTaskSpec
  /** Most chat calls or turns of an agent or MCP episode (default 4; a built-in task has its own). */
  maxTurns?: number
  /** Most episodes of an MCP task at once (default 16; an agent task's is `agent.concurrency`). */
  concurrency?: number
}

/** True for an agent or MCP task (played with `playAgenticTasks`, not from the registry). */
export const isAgenticTask = (t: EvaluationTask) => t.agent !== undefined || t.mcp !== undefined

/** Most turns of an agent or MCP episode of an evaluation whose task gives none. */
const AGENTIC_MAX_TURNS = 4
/** Most episodes at once of an MCP task of an evaluation whose task gives none (a server each when not pooled). */
const MCP_CONCURRENCY = 16

/** What to evaluate. */
export interface EvaluationSettings {
  /** Tasks and the difficulty to evaluate each at (the task's default when absent). */
  tasks: readonly EvaluationTask[]
  /** Samples per instance. */
  k: number
  /** Held-out instances per task (indices 0..n-1 of the eval split). */
  instances: number
  maxNewTokens: number
  /** Sampling temperature (1: the policy's own distribution, as in training). */
  temperature: number
  top_p?: number
  /** Most sequences decoded together. */
  maxBatch?: number
  seed: number
  /** Called after each finished episode with (done, total). */
  onProgress?: (done: number, total: number) => void
}

/**
 * One held-out instance of an evaluation: how many of its k samples succeeded. Two evaluations
 * with the same settings play the same instances with the same sampling seeds (the seed of sample
 * j of instance i is `seed + 1009 i + 7919 j`), so their instances pair up (`pairedDifference`).
 */
export interface EvaluationInstance {
  task: string
  difficulty: number
  /** Index in the task's eval split (an evaluation plays `0..instances-1`). */
  index: number
  /** Samples. */
  k: number
  /** Samples that succeeded, `0..k`; the instance's avg@k is `successes / k`. */
  successes: number
}

/** What an evaluation measured: one row per task and difficulty, and every instance's result. */
export interface Evaluation {
  rows: EvaluationRow[]
  /** Task by task, each in index order. */
  instances: EvaluationInstance[]
}

/**
 * One row per task and difficulty. An agent or MCP task's row has `failed` too when some of its
 * episodes failed twice (an agent that crashed, an MCP server that failed): counted unsuccessful.
 */
export interface EvaluationRow {
  [key: string]: string | number
  task: string
  difficulty: number
  /** Instances. */
  n: number
  k: number
  /** Mean success over the k samples, averaged over instances (DemyAgent's avg@k). */
  avg_at_k: number
  avg_at_k_se: number
  /** Unbiased pass@k (Chen et al. 2021, eq. 1) from the k samples, averaged over instances. */
  pass_at_k: number
  pass_at_k_se: number
  /** Mean outcome reward. */
  reward: number
  /** Mean assistant turns per episode. */
  turns: number
}

/** The policy that plays sample `sample` of held-out instance `index` of `task`. */
export type EvalPolicyFor = (task: string, index: number, sample: number) => Policy

/**
 * avg@k and pass@k on the held-out split: k sampled episodes of each of `instances` eval
 * instances per task, all played at once through one continuous batcher. `tokenizer` must be the
 * one the model was trained with: a checkpoint's `tokenizer.json`, or the chat format of a
 * pretrained model (`loadCheckpointPolicy`). Sample j of instance i is drawn
 * with seed `settings.seed + 1009 i + 7919 j` whatever the model, so two checkpoints evaluated with
 * the same settings meet the same instances and seeds (`pairedDifference` compares them). Agent
 * and MCP tasks (`EvaluationTask.agent`, `.mcp`) are played on their held-out instances through
 * the same batcher (`playAgenticTasks`: an agent's programs call a gateway of this evaluation that
 * serves the model), with the same seeds; their rows and instances are in the same vocabulary.
 * @throws AgentInstancesError for an agent or MCP task's held-out instances that cannot be read.
 */
export async function evaluatePolicy(
  model: Transformer,
  tokenizer: Tokenizer | ChatFormat,
  settings: EvaluationSettings,
): Promise<Evaluation> {
  const batcher = new ContinuousBatcher(model, { maxBatch: settings.maxBatch ?? 64 })
  const builtIn = settings.tasks.filter((t) => !isAgenticTask(t))
  const agentic = settings.tasks.filter(isAgenticTask)
  const total =
    builtIn.length * settings.instances * settings.k +
    agentic.reduce((a, t) => a + agenticInstanceCount(agenticOf(t), settings.instances) * settings.k, 0)
  let done = 0
  const progress = () => settings.onProgress?.(++done, total)
  try {
    const [ours, theirs] = await Promise.all([
      builtIn.length === 0
        ? { rows: [], instances: [] }
        : evaluateEpisodes(
            { ...settings, tasks: builtIn, onProgress: progress },
            (_task, index, sample) =>
              new ModelPolicy(batcher, tokenizer, model.config.contextLength, {
                maxNewTokens: settings.maxNewTokens,
                temperature: settings.temperature,
                top_p: settings.top_p ?? 1,
                seed: episodeSeeds.evaluation(settings.seed, index, sample),
              }),
            Infinity,
          ),
      agentic.length === 0
        ? []
        : playAgenticTasks(
            batcher,
            tokenizer,
            model.config.contextLength,
            settings,
            agentic.map(agenticOf),
            progress,
          ),
    ])
    // One row and the instances per task, in the order of `settings.tasks`.
    const out: Evaluation = { rows: [], instances: [] }
    for (const t of settings.tasks) {
      const a = agentic.indexOf(t)
      const part =
        a >= 0
          ? taskSummary(t.name, agenticOf(t).difficulty, settings.k, theirs[a]!)
          : {
              rows: ours.rows.filter((r) => r.task === t.name),
              instances: ours.instances.filter((r) => r.task === t.name),
            }
      out.rows.push(...part.rows)
      out.instances.push(...part.instances)
    }
    return out
  } finally {
    await batcher.close?.()
  }
}

/** An agent or MCP task of the settings as `playAgenticTasks` takes it. */
const agenticOf = (t: EvaluationTask) => ({
  name: t.name,
  difficulty: t.difficulty ?? 1,
  maxTurns: t.maxTurns ?? AGENTIC_MAX_TURNS,
  concurrency: t.agent?.concurrency ?? t.concurrency ?? MCP_CONCURRENCY,
  ...(t.agent ? { agent: t.agent } : {}),
  ...(t.mcp ? { mcp: t.mcp } : {}),
})

/**
 * avg@k and pass@k of any policy on the held-out split (`evaluatePolicy` for a model; `triad eval
 * --policy openai:URL` for a served one): k episodes of each of `settings.instances` eval
 * instances (indices 0..n-1) per task, at most `concurrency` at once. Only `tasks`, `k`,
 * `instances` and `onProgress` of `settings` are read here; sampling is the policy's.
 * @throws RangeError for an agent or MCP task (they need a checkpoint: `evaluatePolicy`).
 * @throws the first error of an episode (`PolicyEndpointError` of an endpoint that failed mid-way).
 */
export async function evaluateEpisodes(
  settings: Pick<EvaluationSettings, 'tasks' | 'k' | 'instances' | 'onProgress'>,
  policyFor: EvalPolicyFor,
  concurrency: number,
): Promise<Evaluation> {
  const agentic = settings.tasks.find(isAgenticTask)
  if (agentic)
    throw new RangeError(
      `task '${agentic.name}' is an agent or MCP task: it is evaluated against a checkpoint (evaluatePolicy serves it through a gateway of its own), not with a policy`,
    )
  const total = settings.tasks.length * settings.instances * settings.k
  let done = 0
  const jobs = settings.tasks.flatMap((entry) => {
    const task = getTask(entry.name)
    const difficulty = entry.difficulty ?? task.difficulty.default
    return Array.from({ length: settings.instances * settings.k }, (_, j) => ({
      task,
      difficulty,
      index: Math.floor(j / settings.k),
      sample: j % settings.k,
    }))
  })
  const outcomes = await playBounded(jobs, concurrency, async (job) => {
    const t = await playEpisode(
      job.task,
      { index: job.index, difficulty: job.difficulty, split: 'eval' },
      policyFor(job.task.name, job.index, job.sample),
    )
    settings.onProgress?.(++done, total)
    return {
      success: (t.metrics.success ?? (t.reward > 0 ? 1 : 0)) > 0,
      reward: t.reward,
      turns: t.stepGood.length,
    }
  })
  const out: Evaluation = { rows: [], instances: [] }
  let at = 0
  for (const entry of settings.tasks) {
    const difficulty = entry.difficulty ?? getTask(entry.name).difficulty.default
    const episodes = Array.from({ length: settings.instances }, () => {
      const samples = outcomes.slice(at, at + settings.k)
      at += settings.k
      return samples
    })
    const part = taskSummary(entry.name, difficulty, settings.k, episodes)
    out.rows.push(...part.rows)
    out.instances.push(...part.instances)
  }
  return out
}

/**
 * One task's row (avg@k, pass@k with standard errors, mean reward and turns) and its instances
 * from its episodes' outcomes, per instance (by index) its k samples. `failed` is in the row when
 * an episode failed.
 */
function taskSummary(
  task: string,
  difficulty: number,
  k: number,
  episodes: readonly (readonly (Omit<EvalOutcome, 'failed'> & { failed?: boolean })[])[],
): Evaluation {
  const avg = avgAtK(episodes.map((samples) => samples.map((s) => s.success)))
  const pass = passAtKOver(
    episodes.map((samples) => ({ n: samples.length, c: samples.filter((s) => s.success).length })),
    k,
  )
  const flat = episodes.flat()
  const failed = flat.filter((s) => s.failed).length
  return {
    instances: episodes.map((samples, index) => ({
      task,
      difficulty,
      index,
      k: samples.length,
      successes: samples.filter((s) => s.success).length,
    })),
    rows: [
      {
        task,
        difficulty,
        n: episodes.length,
        k,
        ...(failed > 0 ? { failed } : {}),
        avg_at_k: avg.mean,
        avg_at_k_se: avg.stderr,
        pass_at_k: pass.mean,
        pass_at_k_se: pass.stderr,
        reward: flat.reduce((a, s) => a + s.reward, 0) / flat.length,
        turns: flat.reduce((a, s) => a + s.turns, 0) / flat.length,
      },
    ],
  }
}
