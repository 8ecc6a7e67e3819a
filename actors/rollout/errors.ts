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
