import { ErrorCode, ProtocolError } from '../../protocols/index.ts'

/**
 * Errors of the reward model and the triad switches. Each class sets `name`, keeps `cause` and
 * carries the data a caller needs.
 */

/** Triad switches that fail their schema. */
export class TriadConfigError extends Error {
  override name = 'TriadConfigError'
  readonly issues: readonly { path: string; message: string }[]
  constructor(issues: { path: string; message: string }[]) {
    super(`invalid triad switches: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`)
    this.issues = issues
  }
}

/**
 * A judge prompt that does not fit the reward model's context even with the oldest history turns
 * left out. A validation problem: the actor answers it with an `invalid_message` error reply.
 */
export class JudgePromptTooLongError extends ProtocolError {
  override name = 'JudgePromptTooLongError'
  /** Index of the step in the request. */
  readonly stepIndex: number
  /** Tokens of the rendered prompt. */
  readonly tokens: number
  /** The model's context length. */
  readonly contextLength: number
  constructor(stepIndex: number, tokens: number, contextLength: number) {
    super(
      ErrorCode.InvalidMessage,
      `judge prompt of step ${stepIndex} has ${tokens} tokens; the reward model's context holds ${contextLength - 1} (one more for the verdict)`,
    )
    this.stepIndex = stepIndex
    this.tokens = tokens
    this.contextLength = contextLength
  }
}
