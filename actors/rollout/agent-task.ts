import type { Millis, Trajectory } from '../../protocols/index.ts'

/**
 * A task whose episodes are played by an agent program that owns its loop and calls the run's
 * agent gateway (docs/design.md#agent-gateway), instead of triad's agent loop over an environment.
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
