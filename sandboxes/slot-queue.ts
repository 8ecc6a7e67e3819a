import { SandboxBusyError } from './errors.ts'

/**
 * A fixed set of slots (warm containers, local uids) handed out first come, first served.
 * `acquire` waits while all are busy; when `maxQueue` callers already wait it throws
 * SandboxBusyError at once.
 */
export class SlotQueue<T> {
  private readonly free: T[]
  private readonly waiters: ((slot: T) => void)[] = []
  private readonly maxQueue: number
  private busy = 0

  constructor(slots: readonly T[], maxQueue: number) {
    this.free = [...slots]
    this.maxQueue = maxQueue
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.waiters.length
  }

  /** Slots in use. */
  get running(): number {
    return this.busy
  }

  /**
   * Takes a slot, waiting for one if needed.
   * @throws SandboxBusyError when `maxQueue` callers already wait.
   */
  acquire(): Promise<T> {
    const slot = this.free.pop()
    if (slot !== undefined) {
      this.busy++
      return Promise.resolve(slot)
    }
    if (this.waiters.length >= this.maxQueue) return Promise.reject(new SandboxBusyError(this.waiters.length))
    return new Promise((resolve) => {
      this.waiters.push((s) => {
        this.busy++
        resolve(s)
      })
    })
  }

  /** Gives a slot back (or a replacement of it); the longest waiter gets it. */
  release(slot: T): void {
    this.busy--
    const next = this.waiters.shift()
    if (next) next(slot)
    else this.free.push(slot)
  }
}
