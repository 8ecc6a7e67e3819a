import type { z } from 'zod'
import type { EnvHeartbeat, EnvWorkerInfoSchema, Millis, PayloadOf } from '../../protocols/index.ts'

/**
 * The controller's table of env workers, built from heartbeats: who is live, silent (no heartbeat
 * for `silentAfter` intervals: takes no new sessions, its sessions count as failed) or draining,
 * and which live worker with the task has the most free places.
 */

type Heartbeat = PayloadOf<typeof EnvHeartbeat>

/** One worker as last heard, with the starts routed to it since. */
export interface WorkerEntry {
  beat: Heartbeat
  /** Time of the last heartbeat. */
  seen: Millis
  /** Sessions believed live: the last reported plus those started through the controller since. */
  active: number
  /**
   * Starts sent to the worker and not answered yet. A heartbeat may have left the worker before
   * it took them, so each heartbeat's count is raised by these (else a burst of starts between two
   * heartbeats would all see the same free places and pile onto one worker).
   */
  pending: number
  /** Set once the worker went silent (cleared by a new heartbeat). */
  silentSince?: Millis
}

/**
 * The worker table.
 *
 * A missed heartbeat is evidence only while the controller could hear it. When the controller's
 * own process stalls (a long synchronous computation on its event loop: a learner step when every
 * role runs in one process, a big batch of its engines), heartbeats wait in its queue and would
 * arrive "late". So silence is judged as of the controller's last check (`checked`), at most
 * `awakeSlackMs` after it, and the time by which a check came late is credited to every worker.
 */
export class WorkerTable {
  private readonly workers = new Map<string, WorkerEntry>()
  /** Time of the controller's last check, when it checks (see `checked`). */
  private lastCheck?: Millis

  /**
   * @param silentAfter missed heartbeat intervals after which a worker is silent (3).
   * @param awakeSlackMs how long after its last check the controller counts as listening; about
   *   twice its check interval (default: unbounded, silence is judged at the time asked).
   */
  constructor(
    private readonly silentAfter = 3,
    private readonly awakeSlackMs = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Records a check of the controller at `now` that ran `lateMs` after it was due: that time, when
   * the controller could not listen, does not count against any worker.
   */
  checked(now: Millis, lateMs: Millis): void {
    if (lateMs > 0) for (const e of this.workers.values()) e.seen = Math.min(now, e.seen + lateMs)
    this.lastCheck = now
  }

  /** The time up to which the controller is known to have been listening. */
  private heardUntil(now: Millis): Millis {
    return this.lastCheck === undefined ? now : Math.min(now, this.lastCheck + this.awakeSlackMs)
  }

  /** Records a heartbeat; returns `registered` for a new worker, `revived` for a silent one. */
  heartbeat(beat: Heartbeat, now: Millis): 'registered' | 'revived' | 'updated' {
    const old = this.workers.get(beat.worker)
    if (!old) {
      this.workers.set(beat.worker, { beat, seen: now, active: beat.active, pending: 0 })
      return 'registered'
    }
    // Updated in place: a start in flight holds this entry and settles its `pending` on it.
    const revived = old.silentSince !== undefined
    old.beat = beat
    old.seen = now
    old.active = beat.active + old.pending
    old.silentSince = undefined
    return revived ? 'revived' : 'updated'
  }

  /** The entry of a worker. */
  get(worker: string): WorkerEntry | undefined {
    return this.workers.get(worker)
  }

  /** Every worker id. */
  ids(): string[] {
    return [...this.workers.keys()]
  }

  /** Whether a worker has missed `silentAfter` heartbeats at `now`. */
  isSilent(e: WorkerEntry, now: Millis): boolean {
    return this.heardUntil(now) - e.seen > this.silentAfter * e.beat.interval_ms
  }

  /** Workers that became silent since the last call; marks them. */
  newlySilent(now: Millis): WorkerEntry[] {
    const out: WorkerEntry[] = []
    for (const e of this.workers.values())
      if (e.silentSince === undefined && this.isSilent(e, now)) {
        e.silentSince = now
        out.push(e)
      }
    return out
  }

  /**
   * The live, non-draining worker serving `task` with the most free places by the table's estimate
   * (ties: the one heard from last), skipping `exclude`. The estimate only grows between heartbeats
   * (ended sessions show in the next one), so a worker that looks full is still offered last: the
   * worker itself refuses when it is full and the caller tries the next.
   */
  choose(task: string, now: Millis, exclude: ReadonlySet<string> = new Set()): WorkerEntry | undefined {
    let best: WorkerEntry | undefined
    let bestFree = Number.NEGATIVE_INFINITY
    for (const e of this.workers.values()) {
      if (exclude.has(e.beat.worker) || e.beat.draining || !e.beat.tasks.includes(task)) continue
      if (e.silentSince !== undefined || this.isSilent(e, now) || e.beat.capacity === 0) continue
      const free = e.beat.capacity - e.active
      if (free > bestFree || (free === bestFree && best && e.seen > best.seen)) {
        best = e
        bestFree = free
      }
    }
    return best
  }

  /** Every task name served by a live worker, sorted. */
  liveTasks(now: Millis): string[] {
    const s = new Set<string>()
    for (const e of this.workers.values()) if (!this.isSilent(e, now)) for (const t of e.beat.tasks) s.add(t)
    return [...s].sort()
  }

  /** The workers as `env.list` shows them. */
  list(now: Millis): z.infer<typeof EnvWorkerInfoSchema>[] {
    return [...this.workers.values()].map((e) => ({
      worker: e.beat.worker,
      subject: e.beat.subject,
      state: this.isSilent(e, now) ? 'silent' : e.beat.draining ? 'draining' : 'live',
      capacity: e.beat.capacity,
      active: e.active,
      tasks: e.beat.tasks,
      last_seen_ms: now - e.seen,
    }))
  }

  /** Forgets a worker. */
  remove(worker: string): void {
    this.workers.delete(worker)
  }
}
