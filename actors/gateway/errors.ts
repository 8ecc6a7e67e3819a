/** The prompt of a gateway call leaves no room for a generated token in the model's context. */
export class ContextFullError extends Error {
  override name = 'ContextFullError'
  constructor(
    readonly promptTokens: number,
    readonly contextLength: number,
  ) {
    super(
      `the conversation is ${promptTokens} tokens with its generation prompt; the model's context is ${contextLength} tokens`,
    )
  }
}

/**
 * A refusal of the gateway's HTTP API, sent as OpenAI's error object
 * `{error: {message, type, param, code}}` with `status`.
 */
export class GatewayHttpError extends Error {
  override name = 'GatewayHttpError'
  constructor(
    /** HTTP status (400, 401, 404, 409, 422, 429, 503). */
    readonly status: number,
    /** OpenAI's `error.code` (`session_not_found`, `rate_limit_exceeded`, ...). */
    readonly code: string,
    message: string,
    /** The request field at fault, when one is. */
    readonly param: string | null = null,
    /** `Retry-After` of a 429, seconds. */
    readonly retryAfterS?: number,
  ) {
    super(message)
  }
}

/** Why an agent episode failed or was dropped. Closed set; counted per cause in the metrics. */
export const AgentFailure = {
  /** The agent program exited with a non-zero status or a signal. */
  Crashed: 'agent_crashed',
  /** The agent program did not start (missing file, no interpreter). */
  StartFailed: 'agent_start_failed',
  /** The episode ran past its time bound without a reward. */
  Timeout: 'agent_timeout',
  /** The agent exited without reporting a reward, and the task has no reward function. */
  NoReward: 'agent_no_reward',
  /** The agent made no chat call before its episode ended: nothing to train on. */
  NoCalls: 'agent_no_calls',
  /** The task's reward function threw or returned a value that is not a finite number. */
  RewardFailed: 'agent_reward_failed',
  /** An MCP server of the episode crashed, hung or wrote something that is not MCP. */
  McpFailed: 'mcp_failed',
  /** The rollout or the gateway stopped while the episode was open (its program killed). */
  Stopped: 'agent_stopped',
} as const
export type AgentFailure = (typeof AgentFailure)[keyof typeof AgentFailure]

/** An agent episode that failed or was dropped, with why (`failure`) and what the agent or server said. */
export class AgentEpisodeError extends Error {
  override name = 'AgentEpisodeError'
  constructor(
    readonly failure: AgentFailure,
    readonly task: string,
    /** What happened, with the program's or server's stderr tail where there is one. */
    readonly detail: string,
  ) {
    super(`${task} agent episode failed (${failure}): ${detail}`)
  }
}

/** The instances of an agent task cannot be had (`tasks[].instances`). */
export class AgentInstancesError extends Error {
  override name = 'AgentInstancesError'
  constructor(
    /** The count or file as the task gave it. */
    readonly instances: string,
    why: string,
  ) {
    super(`agent task instances ${instances}: ${why}`)
  }
}

/**
 * A task's reward function (`tasks[].reward`, a module whose default export scores an episode's
 * messages) that cannot be used: its default export is not a function, or it returned something
 * that is not a finite number.
 */
export class RewardFunctionError extends Error {
  override name = 'RewardFunctionError'
  constructor(
    /** The module's path as the task gave it. */
    readonly module: string,
    message: string,
  ) {
    super(message)
  }
}
