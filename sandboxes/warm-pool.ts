import { SandboxLostError } from './errors.ts'
import type { RunnerResult } from './runner-job.ts'
import { SlotQueue } from './slot-queue.ts'

/** One warm sandbox of a pool: a backend-specific handle plus the pool's bookkeeping. */
export interface WarmSandbox {
  /** Jobs this sandbox has served. */
  runs: number
  /** False once the sandbox is known dead (its runner exited, its container stopped). */
  alive: boolean
}

/** How a backend makes, uses and removes its sandboxes. */
export interface WarmPoolSpec<S extends WarmSandbox> {
  /** Sandboxes kept warm (the jobs that run at once). */
  size: number
  /** Callers allowed to wait for a sandbox; more get SandboxBusyError. */
  maxQueue: number
  /** Jobs served by one sandbox before it is replaced. */
  recycleAfter: number
  create(): Promise<S>
  destroy(sandbox: S): Promise<void>
  /** Where replacement failures are reported (the pool keeps retrying with backoff). `destroy` is
   *  awaited before the replacement's `create`, so a backend may reuse what it frees. */
  warn(message: string): void
}

/**
 * A pool of warm sandboxes: a job takes one (waiting in line when all are busy), and gives it back
 * afterwards unless it breached a limit, failed, or reached `recycleAfter` runs; then the sandbox is
 * destroyed and a fresh one made in the background, so the caller's answer never waits for that.
 */
export class WarmPool<S extends WarmSandbox> {
  private readonly spec: WarmPoolSpec<S>
  private queue: SlotQueue<S> | undefined
  private readonly live = new Set<S>()
  private closed = false
  /** Sandboxes replaced since start. */
  recycled = 0
  /** Jobs done since start. */
  done = 0

  constructor(spec: WarmPoolSpec<S>) {
    this.spec = spec
  }

  /** Makes the warm sandboxes. @throws whatever `create` throws. */
  async start(): Promise<void> {
    const all: S[] = []
    for (const s of await Promise.all(Array.from({ length: this.spec.size }, () => this.make())))
      all.push(s as S)
    this.queue = new SlotQueue(all, this.spec.maxQueue)
  }

  get running(): number {
    return this.queue?.running ?? 0
  }

  get queued(): number {
    return this.queue?.queued ?? 0
  }

  /**
   * Runs `job` on a warm sandbox. A sandbox found dead (`alive` false, or `job` throwing
   * SandboxLostError before it started anything) is replaced and the job tried on another one.
   * @throws SandboxBusyError when the wait line is full; other rejections of `job` become `{error}`.
   */
  async use(job: (sandbox: S) => Promise<RunnerResult>): Promise<RunnerResult> {
    if (!this.queue || this.closed) return { error: 'the sandbox pool is not running' }
    for (let lost = 0; ; lost++) {
      const sandbox = await this.queue.acquire()
      if (!sandbox.alive) {
        // died while idle (killed, OOM, daemon restart): replace it and take another
        void this.replace(sandbox)
        continue
      }
      let result: RunnerResult
      try {
        result = await job(sandbox)
      } catch (err) {
        if (err instanceof SandboxLostError && lost < this.spec.size) {
          sandbox.alive = false
          void this.replace(sandbox)
          continue
        }
        result = { error: (err as Error).message }
      }
      sandbox.runs++
      this.done++
      const breach = 'error' in result || result.breaches.length > 0
      if (breach || !sandbox.alive || sandbox.runs >= this.spec.recycleAfter) void this.replace(sandbox)
      else this.queue.release(sandbox)
      return result
    }
  }

  private async make(): Promise<S> {
    const s = await this.spec.create()
    this.live.add(s)
    return s
  }

  private async replace(old: S): Promise<void> {
    this.recycled++
    this.live.delete(old)
    await this.spec
      .destroy(old)
      .catch((err: Error) => this.spec.warn(`triad sandbox: cannot remove a sandbox: ${err.message}`))
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const fresh = await this.make()
        if (this.closed) {
          this.live.delete(fresh)
          await this.spec.destroy(fresh).catch(() => {})
          return
        }
        this.queue!.release(fresh)
        return
      } catch (err) {
        this.spec.warn(`triad sandbox: cannot make a replacement sandbox: ${(err as Error).message}`)
        await new Promise((r) => setTimeout(r, Math.min(500 * 2 ** attempt, 10_000)))
      }
    }
  }

  /** Destroys every sandbox; jobs in flight end with errors. */
  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.live].map((s) => this.spec.destroy(s).catch(() => {})))
    this.live.clear()
  }
}
