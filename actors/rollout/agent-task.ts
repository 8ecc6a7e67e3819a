import type { Millis, Trajectory } from '../../protocols/index.ts'

/**
 * A task whose episodes are played by an agent program that owns its loop and calls the run's
 * agent gateway (docs/gateway.md), instead of triad's agent loop over an environment.
 */
export interface AgentTaskSpec {
  /** The program: a `.ts`, `.js`/`.mjs` (run by node) or `.py` (run by python3) file, else an executable. */
  program: string
  /**
   * The task's instances: a count `n` (instance `i` of `0..n-1` is `{"index": i, "seed": s}`), or
   * a JSONL file whose row `i` is instance `i` (each row a JSON object, given `index`).
   */
  instances: number | string
  /** Most programs of this task running at once. */
  concurrency: number
  /** Time bound of one episode, from its start to its reward, s. */
  timeoutS: number
  /**
   * A module whose default export rewards an episode the agent ended without reporting a reward:
   * `(messages, instance) => number` (or a promise of one), over the episode's chat messages.
   */
  reward?: string
}

/** Which instance an agent episode plays. */
export interface AgentInstanceRef {
  /** The group's instance seed (`index` is drawn from it). */
  seed: number
  split: 'train' | 'eval'
}

/** One finished agent episode. */
export interface AgentEpisodeResult {
  /** One trajectory per trained segment, each with the episode's reward and its messages. */
  trajectories: Trajectory[]
  /** Wall time of the episode, ms. */
  durationMs: Millis
  generatedTokens: number
}

/**
 * Plays agent episodes (the gateway's agent runner). A failure rejects with an error carrying a
 * string `failure` (the cause counted in `rollout/failed/<cause>`).
 */
export interface AgentEpisodeRunner {
  run(
    task: string,
    spec: AgentTaskSpec,
    instance: AgentInstanceRef,
    settings: { maxTurns: number; maxNewTokens: number },
    samplingSeed: number,
    signal: AbortSignal,
  ): Promise<AgentEpisodeResult>
}

/** An MCP server of a task, started over stdio (`command args`, `env` added to its environment). */
export interface McpServerSpec {
  command: string
  args: string[]
  env: Record<string, string>
  /** `episode`: a fresh server per episode; `pooled`: one server shared by the task's episodes. */
  lifetime: 'episode' | 'pooled'
  /** Most time to start or to answer one tool call, s. */
  timeoutS: number
}

/**
 * A task whose environment is MCP servers: triad's agent loop renders the instance's messages with
 * the servers' tools, sends the policy's tool calls to them, and ends when the policy answers
 * without a tool call (or at `maxTurns`); the task's reward function rewards the episode.
 */
export interface McpTaskSpec {
  servers: McpServerSpec[]
  /** A JSONL file of instances (`{"messages": [...]}` or `{"question": "..."}` per line), or a count. */
  instances: number | string
  /** The reward module: default export `(messages, instance) => number`. */
  reward: string
}
