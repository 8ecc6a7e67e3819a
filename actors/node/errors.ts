/**
 * A role's start that was waiting on another role (the rollout waiting for the learner's tokenizer
 * or first weights) and was aborted: the run is stopping, for example because that role failed.
 */
export class StartAbortedError extends Error {
  override name = 'StartAbortedError'
  constructor(
    /** The role whose start was aborted: `rollout`. */
    readonly role: string,
    /** What it was waiting for. */
    readonly waitingFor: string,
  ) {
    super(`the ${role} role was stopped while it waited for ${waitingFor}`)
  }
}
