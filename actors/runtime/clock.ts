import type { Millis } from '../../protocols/index.ts'

/**
 * The time source of every actor. Timers go through a `Clock` so tests can run on a simulated one
 * (`ManualClock`) instead of waiting for real time.
 */
export interface Clock {
  /** Milliseconds since an arbitrary epoch (the Unix epoch for `systemClock`). */
  now(): Millis
  /** Calls `fn` once after `ms`; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: Millis): unknown
  clearTimeout(handle: unknown): void
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
}

/** Resolves after `ms` on `clock`, or at once when `signal` aborts (it never rejects). */
export function sleep(clock: Clock, ms: Millis, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const wake = () => {
      clock.clearTimeout(timer)
      resolve()
    }
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', wake)
      resolve()
    }, ms)
    signal?.addEventListener('abort', wake, { once: true })
  })
}

/**
 * A simulated clock for tests: time only moves when `advance` is called, and due timers fire in
 * order of their due time.
 */
export class ManualClock implements Clock {
  private time: Millis
  private seq = 0
  private readonly timers = new Map<number, { due: Millis; fn: () => void }>()
  constructor(start: Millis = 0) {
    this.time = start
  }
  now(): Millis {
    return this.time
  }
  setTimeout(fn: () => void, ms: Millis): unknown {
    const id = ++this.seq
    this.timers.set(id, { due: this.time + Math.max(0, ms), fn })
    return id
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number)
  }
  /** Number of timers not yet fired. */
  pending(): number {
    return this.timers.size
  }
  /** Moves time forward by `ms`, firing every timer that falls due, in due order. */
  advance(ms: Millis): void {
    const end = this.time + ms
    for (;;) {
      let next: [number, { due: Millis; fn: () => void }] | undefined
      for (const entry of this.timers)
        if (entry[1].due <= end && (!next || entry[1].due < next[1].due)) next = entry
      if (!next) break
      this.timers.delete(next[0])
      this.time = next[1].due
      next[1].fn()
    }
    this.time = end
  }
}
