import {
  MessageRegistry,
  type Millis,
  type PayloadOf,
  PolicyGenerate,
  PolicyGenerated,
  Subjects,
} from '../../protocols/index.ts'
import { NoRespondersError } from '../runtime/errors.ts'
import type { Transport } from '../runtime/transport.ts'

const generatedReplies = new MessageRegistry([PolicyGenerated])

/** One generated turn with where it came from. */
export type GeneratedTurn = PayloadOf<typeof PolicyGenerated>

/** A seeded uniform source in [0, 1). */
export interface Uniform {
  next(): number
}

/**
 * Cross-policy sampling (AgentRL, arXiv 2510.04206): each turn's generate call goes to a stale
 * engine with probability `rho`, otherwise to a fresh one, so one trajectory can mix policies.
 * When no stale engine answers, the turn falls back to the fresh engines (counted).
 */
export class PolicyRouter {
  /** Turns sent to fresh and stale engines, and stale turns that fell back to fresh. */
  readonly counts = { fresh: 0, stale: 0, staleFallback: 0 }
  constructor(
    private readonly transport: Transport,
    private readonly run: string,
    private readonly rho: number,
    private readonly rng: Uniform,
    private readonly timeoutMs: Millis = 120_000,
  ) {
    if (!(rho >= 0 && rho <= 1)) throw new Error(`rho must be in [0, 1], got ${rho}`)
  }

  /**
   * Generates one turn.
   * @param signal gives the request up when aborted (RequestAbortedError).
   * @throws RemoteError, RequestTimeoutError, NoRespondersError from the engines; RequestAbortedError.
   */
  async generate(request: PayloadOf<typeof PolicyGenerate>, signal?: AbortSignal): Promise<GeneratedTurn> {
    const toStale = this.rho > 0 && this.rng.next() < this.rho
    if (toStale) {
      try {
        const reply = await this.ask(Subjects.policyStale(this.run), request, signal, false)
        this.counts.stale++
        return reply
      } catch (err) {
        if (!(err instanceof NoRespondersError)) throw err
        this.counts.staleFallback++
      }
    }
    const reply = await this.ask(Subjects.policyFresh(this.run), request, signal)
    this.counts.fresh++
    return reply
  }

  private async ask(
    subject: string,
    request: PayloadOf<typeof PolicyGenerate>,
    signal: AbortSignal | undefined,
    retryNoResponders = true,
  ) {
    const reply = await this.transport.request(subject, PolicyGenerate.make(request), {
      timeoutMs: this.timeoutMs,
      replies: generatedReplies,
      retryNoResponders,
      signal,
    })
    return reply.payload as GeneratedTurn
  }
}
