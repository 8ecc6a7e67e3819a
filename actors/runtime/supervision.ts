import type { Millis } from '../../protocols/index.ts'
import { SupervisionPolicyError } from './errors.ts'

/**
 * Supervision declared as data (after Erlang/OTP and Akka typed): what happens when an actor's
 * `receive` throws. The actor is restarted (its state re-made by `init`) after an exponential
 * backoff; more than `maxRestarts` crashes within `withinMs` hit the limit, and then the actor is
 * stopped or the failure escalates to its parent.
 */
export interface SupervisionPolicy {
  /** Restarts allowed within the window before the limit applies. */
  maxRestarts: number
  /** The sliding window over which restarts are counted, ms. */
  withinMs: Millis
  /** Delay before restart n (1-based): `min(maxMs, initialMs * factor^(n-1))`, n counted in the window. */
  backoff: { initialMs: Millis; maxMs: Millis; factor: number }
  /** What happens past the limit. */
  onLimit: OnLimit
}

/** What a supervisor does when a child exceeds its restart limit. */
export const OnLimit = {
  /** Stop the actor; pending and later asks fail with `ActorStoppedError`. */
  Stop: 'stop',
  /** Stop the actor and report the failure to its parent, which counts it as its own crash. */
  Escalate: 'escalate',
} as const
export type OnLimit = (typeof OnLimit)[keyof typeof OnLimit]

/** Default: up to 5 restarts in 60 s, backoff 50 ms doubling to 5 s, then stop. */
export const defaultSupervision: SupervisionPolicy = {
  maxRestarts: 5,
  withinMs: 60_000,
  backoff: { initialMs: 50, maxMs: 5_000, factor: 2 },
  onLimit: OnLimit.Stop,
}

/** The decision for one crash. */
export type CrashDecision =
  | { action: 'restart'; delayMs: Millis; restartsInWindow: number }
  | { action: OnLimit }

/**
 * Counts the crashes of one actor in a sliding window and decides each one. Pure: time comes in
 * as an argument.
 * @throws SupervisionPolicyError (constructor) for a policy out of range.
 */
export class RestartTracker {
  private readonly crashes: Millis[] = []
  /** Total restarts granted since creation. */
  restarts = 0
  constructor(readonly policy: SupervisionPolicy) {
    if (policy.maxRestarts < 0 || policy.withinMs <= 0 || policy.backoff.factor < 1)
      throw new SupervisionPolicyError(
        'invalid supervision policy: maxRestarts >= 0, withinMs > 0, backoff.factor >= 1',
      )
  }

  /** Records a crash at time `now` and decides: restart after a delay, or the policy's `onLimit`. */
  onCrash(now: Millis): CrashDecision {
    while (this.crashes.length > 0 && this.crashes[0]! <= now - this.policy.withinMs) this.crashes.shift()
    this.crashes.push(now)
    const n = this.crashes.length
    if (n > this.policy.maxRestarts) return { action: this.policy.onLimit }
    const { initialMs, maxMs, factor } = this.policy.backoff
    this.restarts++
    // delay_n = min(maxMs, initialMs * factor^(n-1))
    return { action: 'restart', delayMs: Math.min(maxMs, initialMs * factor ** (n - 1)), restartsInWindow: n }
  }
}
