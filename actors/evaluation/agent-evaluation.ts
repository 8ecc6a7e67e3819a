import { asChatFormat, type ChatFormat, type ContinuousBatcher, type Tokenizer } from '../../gpu/index.ts'
import type { ChatMessage } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import { AgentInstances, AgentRunner, Gateway } from '../gateway/index.ts'
import { McpTaskEnv } from '../mcp/index.ts'
import type { AgentTaskSpec, McpTaskSpec } from '../rollout/index.ts'
import { episodeSeeds } from '../runtime/index.ts'
import { BatcherTurns } from './batcher-turns.ts'
import { playBounded } from './bounded-play.ts'
import { ModelPolicy } from './model-policy.ts'

/**
 * An agent or MCP task of an evaluation: its spec with `instances` its held-out instances (the
 * recipe's `evalInstances`), played `0..n-1` (docs/gateway.md#held-out-evaluation).
 */
export interface AgenticEvalTask {
  name: string
  difficulty: number
  /** Most chat calls (agent) or assistant turns (MCP) of one episode. */
  maxTurns: number
  /** Most episodes at once (an agent task's `concurrency`; an MCP task's servers are one set per episode unless pooled). */
  concurrency: number
  agent?: AgentTaskSpec
  mcp?: McpTaskSpec
}

/** One sampled episode of an evaluation. */
export interface EvalOutcome {
  success: boolean
  reward: number
  /** Assistant turns. */
  turns: number
  /** True when the episode failed twice (a crashed agent, a failed MCP server): counted unsuccessful. */
  failed: boolean
}

/** What the agentic evaluation reads of the evaluation settings. */
export interface AgenticEvalSettings {
  k: number
  /** Held-out instances per task (fewer when the task has fewer: all of them). */
  instances: number
  maxNewTokens: number
  temperature: number
  top_p?: number
  seed: number
}

/** How many times an episode of an agentic evaluation is played before it counts as failed. */
const ATTEMPTS = 2

/**
 * The held-out instances an agentic task plays: `min(settings.instances, its number of instances)`.
 * @throws InvariantError when the task is neither an agent nor an MCP task.
 */
export function agenticInstanceCount(task: AgenticEvalTask, instances: number): number {
  const spec = task.agent ?? task.mcp
  if (!spec) throw new InvariantError(`task ${task.name} is neither an agent nor an MCP task`)
  return Math.min(instances, AgentInstances.of(spec.instances).size)
}

/**
 * Plays the held-out episodes of agent and MCP tasks against one checkpoint's batcher: sample j of
 * instance i with seed `settings.seed + 1009 i + 7919 j`, as the built-in tasks' (so two
 * checkpoints evaluated alike pair up). An agent task's programs are started as in training
 * (`AgentRunner`), in front of a gateway of this evaluation's own that serves the batcher
 * (`BatcherTurns`), at most the task's `concurrency` at once; an MCP task is played by triad's
 * loop over its servers with the model policy (`ModelPolicy`, as the built-in tasks), at most
 * `concurrency` episodes at once. An episode
 * that fails is played again once with a new session, then counted unsuccessful (`failed`).
 * @param onEpisode called after each finished sample.
 * @returns per task (in order) per instance (`0..n-1`) its k outcomes.
 * @throws AgentInstancesError for held-out instances that cannot be read; the listen error of the gateway.
 */
export async function playAgenticTasks(
  batcher: ContinuousBatcher,
  tokenizer: Tokenizer | ChatFormat,
  contextLength: number,
  settings: AgenticEvalSettings,
  tasks: readonly AgenticEvalTask[],
  onEpisode: () => void,
): Promise<EvalOutcome[][][]> {
  const chat = asChatFormat(tokenizer)
  const needsGateway = tasks.some((t) => t.agent)
  const agents = tasks.reduce((n, t) => n + (t.agent?.concurrency ?? 0), 0)
  const gateway = needsGateway
    ? await Gateway.start({
        policy: new BatcherTurns(batcher),
        chat,
        contextLength,
        sampling: { temperature: settings.temperature, top_p: settings.top_p ?? 1 },
        maxInFlight: Math.max(256, 2 * agents),
      })
    : undefined
  const runner = gateway ? new AgentRunner(gateway) : undefined
  const mcpEnvs: McpTaskEnv[] = []
  const abort = new AbortController()
  try {
    return await Promise.all(
      tasks.map(async (task) => {
        const n = agenticInstanceCount(task, settings.instances)
        const jobs = Array.from({ length: n * settings.k }, (_, j) => ({
          index: Math.floor(j / settings.k),
          sample: j % settings.k,
        }))
        const seedOf = (index: number, sample: number) =>
          episodeSeeds.evaluation(settings.seed, index, sample)
        let play: (index: number, sample: number) => Promise<Omit<EvalOutcome, 'failed'>>
        let concurrency: number
        if (task.agent) {
          const spec = task.agent
          concurrency = Infinity // the runner bounds the task's programs (`concurrency`)
          play = async (index, sample) => {
            const r = await runner!.run(
              task.name,
              spec,
              { seed: index, split: 'eval' },
              { maxTurns: task.maxTurns, maxNewTokens: settings.maxNewTokens },
              seedOf(index, sample),
              abort.signal,
            )
            const reward = r.trajectories[0]!.reward
            const success = r.trajectories[0]!.metrics.success ?? (reward > 0 ? 1 : 0)
            return { success: success > 0, reward, turns: r.trajectories.reduce((a, t) => a + t.turns, 0) }
          }
        } else {
          const env = new McpTaskEnv(task.name, task.mcp!)
          mcpEnvs.push(env)
          concurrency = task.concurrency
          play = (index, sample) =>
            playMcpEpisode(
              env,
              task,
              index,
              new ModelPolicy(batcher, chat, contextLength, {
                maxNewTokens: settings.maxNewTokens,
                temperature: settings.temperature,
                top_p: settings.top_p ?? 1,
                seed: seedOf(index, sample),
              }),
            )
        }
        const outcomes = await playBounded(jobs, concurrency, async (job) => {
          let out: EvalOutcome = { success: false, reward: 0, turns: 0, failed: true }
          for (let attempt = 0; attempt < ATTEMPTS && out.failed; attempt++)
            try {
              out = { ...(await play(job.index, job.sample)), failed: false }
            } catch (err) {
              if (abort.signal.aborted) throw err
            }
          onEpisode()
          return out
        })
        return Array.from({ length: n }, (_, i) => outcomes.slice(i * settings.k, (i + 1) * settings.k))
      }),
    )
  } finally {
    abort.abort()
    await Promise.all(mcpEnvs.map((e) => e.close()))
    await gateway?.close('the evaluation ended')
  }
}

/**
 * One held-out episode of an MCP task with a policy: the instance's first messages and the servers'
 * tools, then per turn the policy's message to the servers, until a turn without a tool call (the
 * reward function rewards it) or `maxTurns` (reward 0).
 * @throws McpServerError when a server fails.
 */
async function playMcpEpisode(
  env: McpTaskEnv,
  task: AgenticEvalTask,
  index: number,
  policy: ModelPolicy,
): Promise<Omit<EvalOutcome, 'failed'>> {
  const session = await env.start({ task: task.name, seed: index, split: 'eval' })
  const messages: ChatMessage[] = [...session.messages]
  try {
    for (let turn = 1; turn <= task.maxTurns; turn++) {
      const message = await policy.act(messages, session.tools)
      messages.push(message)
      const step = await env.interact(session, message)
      messages.push(...step.messages)
      if (step.done)
        return {
          success: (step.metrics.success ?? (step.reward > 0 ? 1 : 0)) > 0,
          reward: step.reward,
          turns: turn,
        }
    }
    await env.cancel(session)
    return { success: false, reward: 0, turns: task.maxTurns }
  } catch (err) {
    await env.cancel(session).catch(() => undefined)
    throw err
  }
}
