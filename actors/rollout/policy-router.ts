import {
  MessageRegistry,
  type Millis,
  type PayloadOf,
  PolicyGenerate,
  PolicyGenerated,
  Subjects,
} from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'
import { NoRespondersError, RequestTimeoutError } from '../runtime/index.ts'
import { RolloutSettingsError } from './errors.ts'

const generatedReplies = new MessageRegistry([PolicyGenerated])

/** One generated turn with where it came from. */
export type GeneratedTurn = PayloadOf<typeof PolicyGenerated>

/** A seeded uniform source in [0, 1). */
export interface Uniform {
  next(): number
}

/** The shortest wait for one generate attempt once a reply time is known, ms. */
export const GENERATE_ATTEMPT_FLOOR_MS = 10_000
/** One attempt waits this many times the slowest generate reply seen so far. */
export const GENERATE_ATTEMPT_FACTOR = 4

/**
 * Cross-policy sampling (AgentRL, arXiv 2510.04206): each turn's generate call goes to a stale
 * engine with probability `rho`, otherwise to a fresh one, so one trajectory can mix policies.
 * When no stale engine answers, the turn falls back to the fresh engines (counted).
 *
 * A request that a server or an engine's host took with it when it went away gets no reply (core
 * NATS delivers at most once), so one attempt waits `GENERATE_ATTEMPT_FACTOR` times the slowest
 * reply seen so far (at least `attemptFloorMs`, default `GENERATE_ATTEMPT_FLOOR_MS`; `timeoutMs`
 * before the first reply),
 * then the request is sent again, to whichever engine of the queue group takes it, until
 * `timeoutMs` in all (docs/scaling.md). A reply that comes after its attempt is dropped.
 * @throws RolloutSettingsError (constructor) for a `rho` outside [0, 1].
 */
export class PolicyRouter {
  /**
   * Turns sent to fresh and stale engines, stale turns that fell back to fresh, and attempts
   * sent again after they got no reply in time.
   */
  readonly counts = { fresh: 0, stale: 0, staleFallback: 0, resent: 0 }
  /** The slowest generate reply so far, ms (0 before the first). */
  private slowestMs = 0
  constructor(
    private readonly transport: Transport,
    private readonly run: string,
    private readonly rho: number,
    private readonly rng: Uniform,
    private readonly timeoutMs: Millis = 120_000,
    private readonly attemptFloorMs: Millis = GENERATE_ATTEMPT_FLOOR_MS,
  ) {
    if (!(rho >= 0 && rho <= 1)) throw new RolloutSettingsError(`rho must be in [0, 1], got ${rho}`)
  }

  /**
   * Generates one turn.
   * @param signal gives the request up when aborted (RequestAbortedError).
   * @throws RemoteError, NoRespondersError from the engines; RequestTimeoutError when no attempt got
   *   a reply within `timeoutMs` in all; RequestAbortedError.
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
    const start = Date.now()
    for (;;) {
      const left = this.timeoutMs - (Date.now() - start)
      const attemptMs =
        this.slowestMs === 0
          ? left
          : Math.min(left, Math.max(this.attemptFloorMs, GENERATE_ATTEMPT_FACTOR * this.slowestMs))
      const sent = Date.now()
      try {
        const reply = await this.transport.request(subject, PolicyGenerate.make(request), {
          timeoutMs: attemptMs,
          replies: generatedReplies,
          retryNoResponders,
          signal,
        })
        this.slowestMs = Math.max(this.slowestMs, Date.now() - sent)
        return reply.payload as GeneratedTurn
      } catch (err) {
        if (!(err instanceof RequestTimeoutError) || Date.now() - start >= this.timeoutMs - 1) {
          if (err instanceof RequestTimeoutError)
            throw new RequestTimeoutError(subject, this.timeoutMs, err.cause ?? err)
          throw err
        }
        this.counts.resent++
      }
    }
  }
}
