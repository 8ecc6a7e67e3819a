import type { Trajectory } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'

/**
 * Accumulates the token sequence of one multi-turn episode: context tokens (prompt, tool
 * results, headers) with loss mask 0, and generated tokens with mask 1, their behavior
 * log-probabilities and the weight version that produced each.
 */
export class TrajectoryBuilder {
  private readonly tokens: number[] = []
  private readonly mask: number[] = []
  private readonly logprobs: number[] = []
  private readonly versions: number[] = []
  readonly turnStarts: number[] = []

  get length(): number {
    return this.tokens.length
  }

  /** Appends context tokens (not trained on). */
  appendContext(ids: ArrayLike<number>): void {
    for (let i = 0; i < ids.length; i++) {
      this.tokens.push(ids[i]!)
      this.mask.push(0)
      this.logprobs.push(0)
      this.versions.push(-1)
    }
  }

  /**
   * Appends one generated turn: `tokens[n]`, `logprobs[n]` from engine weights `version`.
   * @throws InvariantError when `ids` and `logprobs` differ in length.
   */
  appendGenerated(ids: ArrayLike<number>, logprobs: ArrayLike<number>, version: number): void {
    if (ids.length !== logprobs.length)
      throw new InvariantError(`generated ${ids.length} tokens but ${logprobs.length} logprobs`)
    this.turnStarts.push(this.tokens.length)
    for (let i = 0; i < ids.length; i++) {
      this.tokens.push(ids[i]!)
      this.mask.push(1)
      this.logprobs.push(logprobs[i]!)
      this.versions.push(version)
    }
  }

  /** The whole context so far, `[T]` int32 (the prompt of the next turn). */
  ids(): Int32Array<ArrayBuffer> {
    return Int32Array.from(this.tokens)
  }

  /**
   * The finished trajectory, cut to its first `maxTokens` tokens when given (only trailing context,
   * such as the last tool results, can pass the model's context: generation never does).
   */
  build(
    rest: Omit<Trajectory, 'tokens' | 'loss_mask' | 'logprobs' | 'versions' | 'turn_starts'>,
    maxTokens = Number.POSITIVE_INFINITY,
  ): Trajectory {
    const n = Math.min(this.tokens.length, maxTokens)
    return {
      tokens: Int32Array.from(this.tokens.slice(0, n)),
      loss_mask: Uint8Array.from(this.mask.slice(0, n)),
      logprobs: Float32Array.from(this.logprobs.slice(0, n)),
      versions: Int32Array.from(this.versions.slice(0, n)),
      turn_starts: Int32Array.from(this.turnStarts.filter((t) => t < n)),
      ...rest,
    }
  }
}
