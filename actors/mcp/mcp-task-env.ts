import { randomUUID } from 'node:crypto'
import {
  type AssistantMessage,
  type ChatMessage,
  type EnvStart,
  InvariantError,
  type PayloadOf,
  SessionStatus,
  type ToolMessage,
} from '../../protocols/index.ts'
import {
  type AgentInstance,
  AgentInstances,
  loadRewardFunction,
  RewardFunctionError,
} from '../gateway/index.ts'
import type { EnvSession, EnvStep, EpisodeEnv, McpTaskSpec } from '../rollout/index.ts'
import { McpInstanceError, McpServerError } from './errors.ts'
import { McpConnection } from './mcp-connection.ts'

/** One episode's servers and conversation. */
interface McpEpisode {
  instance: AgentInstance
  servers: McpConnection[]
  /** Per tool name, the server that has it (the first server wins a name two servers have). */
  owner: Map<string, McpConnection>
  messages: ChatMessage[]
}

/**
 * MCP servers as a task's environment (docs/gateway.md): the agent loop's `env` for an
 * MCP task. `start` draws the instance from the seed (`messages`, or `question` as the user turn),
 * starts the task's servers (a fresh one per episode, or the pooled one of a `pooled` server) and
 * lists their tools into the tool schemas the policy sees; `interact` sends the policy's tool calls
 * to the server that has each tool and returns their results; a turn without a tool call ends the
 * episode, rewarded by the task's reward function over its messages. A server that crashes, hangs
 * or writes garbage fails the episode (McpServerError, with its stderr tail; counted
 * `mcp_failed`); a pooled server that failed is started again for the next episode.
 */
export class McpTaskEnv implements EpisodeEnv {
  private readonly instances: AgentInstances
  private readonly episodes = new Map<string, McpEpisode>()
  /** Pooled servers by their index in `spec.servers`. */
  private readonly pool = new Map<number, Promise<McpConnection>>()

  constructor(
    private readonly task: string,
    private readonly spec: McpTaskSpec,
  ) {
    this.instances = AgentInstances.of(spec.instances)
  }

  /**
   * Starts an episode: its instance, its servers, their tools.
   * @throws McpServerError when a server does not start; McpInstanceError for an instance with
   *   neither `messages` nor `question`.
   */
  async start(request: PayloadOf<typeof EnvStart>): Promise<EnvSession> {
    const instance = this.instances.pick(request.seed ?? 0)
    const first = firstMessages(instance)
    const servers = await Promise.all(this.spec.servers.map((_, i) => this.server(i)))
    const owner = new Map<string, McpConnection>()
    for (const s of servers)
      for (const t of s.tools) if (!owner.has(t.function.name)) owner.set(t.function.name, s)
    const session = randomUUID()
    this.episodes.set(session, { instance, servers, owner, messages: [...first] })
    return {
      session,
      worker: `mcp:${this.task}`,
      messages: first,
      tools: [...owner.entries()].map(([name, s]) => s.tools.find((t) => t.function.name === name)!),
    }
  }

  /**
   * One assistant turn: its tool calls answered by their servers, or (no tool call) the episode's end.
   * @throws McpServerError when a server fails; InvariantError for a session this environment
   *   does not hold; RewardFunctionError when the reward function cannot be loaded or returns a
   *   value that is not a finite number.
   */
  async interact(session: EnvSession, message: AssistantMessage): Promise<EnvStep> {
    const ep = this.episodes.get(session.session)
    if (!ep) throw new InvariantError(`no MCP episode ${session.session} of task ${this.task}`)
    ep.messages.push(message)
    if (!message.tool_calls?.length) {
      await this.end(session.session)
      const fn = await loadRewardFunction(this.spec.reward)
      const reward = await fn(ep.messages, ep.instance)
      if (typeof reward !== 'number' || !Number.isFinite(reward))
        throw new RewardFunctionError(
          this.spec.reward,
          `reward function ${this.spec.reward} returned ${String(reward)}, not a finite number`,
        )
      return {
        done: true,
        reward,
        status: SessionStatus.Completed,
        messages: [],
        metrics: { success: reward > 0 ? 1 : 0 },
      }
    }
    const results: ToolMessage[] = []
    for (const call of message.tool_calls) {
      const server = ep.owner.get(call.function.name)
      let content: string
      let args: unknown
      try {
        args = JSON.parse(call.function.arguments)
      } catch {
        args = undefined
      }
      if (!server)
        content = `error: no tool '${call.function.name}'; the tools are ${[...ep.owner.keys()].join(', ')}`
      else if (typeof args !== 'object' || args === null || Array.isArray(args))
        content = `error: the arguments of ${call.function.name} are not a JSON object`
      else
        try {
          content = await server.call(call.function.name, args as Record<string, unknown>)
        } catch (err) {
          await this.end(session.session, err instanceof McpServerError)
          throw err
        }
      results.push({ role: 'tool', content, tool_call_id: call.id, name: call.function.name })
    }
    ep.messages.push(...results)
    return { done: false, reward: 0, status: SessionStatus.Running, messages: results, metrics: {} }
  }

  /** Ends an episode now: its own servers stop. */
  async cancel(session: EnvSession): Promise<void> {
    await this.end(session.session)
  }

  /** Stops the pooled servers and every episode's. */
  async close(): Promise<void> {
    await Promise.all([...this.episodes.keys()].map((s) => this.end(s)))
    const pooled = [...this.pool.values()]
    this.pool.clear()
    await Promise.all(pooled.map((p) => p.then((c) => c.close()).catch(() => undefined)))
  }

  /** Server `i` for a new episode: a fresh one, or the pooled one (started again if it failed). */
  private async server(i: number): Promise<McpConnection> {
    const spec = this.spec.servers[i]!
    if (spec.lifetime !== 'pooled') return McpConnection.start(spec)
    let p = this.pool.get(i)
    const alive = p && (await p.then((c) => !c.failed).catch(() => false))
    if (!p || !alive) {
      p = McpConnection.start(spec)
      this.pool.set(i, p)
    }
    return p
  }

  private async end(session: string, failedServer = false) {
    const ep = this.episodes.get(session)
    if (!ep) return
    this.episodes.delete(session)
    await Promise.all(
      ep.servers.map((s, i) =>
        this.spec.servers[i]!.lifetime === 'pooled' && !(failedServer && s.failed) ? undefined : s.close(),
      ),
    )
  }
}

/**
 * The first messages of an instance: its `messages`, or its `question` as the user turn.
 * @throws McpInstanceError when it has neither.
 */
function firstMessages(instance: AgentInstance): ChatMessage[] {
  if (Array.isArray(instance.messages)) return instance.messages as ChatMessage[]
  if (typeof instance.question === 'string') return [{ role: 'user', content: instance.question }]
  throw new McpInstanceError(
    instance.index,
    `MCP task instance ${instance.index} has neither "messages" nor "question"`,
  )
}
