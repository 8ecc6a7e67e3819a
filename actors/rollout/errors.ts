/** Why an episode failed for good (after its retries). Closed set; counted per cause in metrics. */
export const EpisodeFailure = {
  /** `env.start` failed (unknown task, no live worker, timeout). */
  StartFailed: 'start_failed',
  /** The environment session died or stopped answering mid-episode. */
  SessionLost: 'session_lost',
  /** No policy engine answered a generate request. */
  PolicyUnavailable: 'policy_unavailable',
} as const
export type EpisodeFailure = (typeof EpisodeFailure)[keyof typeof EpisodeFailure]

/** An episode that could not be completed; `cause` keeps the underlying error. */
export class EpisodeError extends Error {
  override name = 'EpisodeError'
  constructor(
    readonly failure: EpisodeFailure,
    readonly task: string,
    cause: unknown,
  ) {
    super(`${task} episode failed (${failure}): ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
  }
}

/**
 * Settings or dependencies of a rollout that cannot work: an empty task mix, a task weight not
 * above 0, an MCP or agent task without the MCP environment or agent gateway it needs, a
 * `groupSize` below 1, an `annotateShare` or a policy router's `rho` outside [0, 1], an episode
 * with neither a tokenizer nor a chat format. Raised before anything is played.
 */
export class RolloutSettingsError extends Error {
  override name = 'RolloutSettingsError'
  constructor(message: string) {
    super(message)
  }
}
