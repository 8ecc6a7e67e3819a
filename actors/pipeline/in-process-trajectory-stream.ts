import type { Millis, TrajectoryGroupPayload } from '../../protocols/index.ts'
import type { InProcessTransport } from '../runtime/index.ts'
import { type Clock, systemClock } from '../runtime/index.ts'
import { BufferFullError, PublisherClosedError, TrajectoryStreamNotFoundError } from './errors.ts'
import {
  addDelivered,
  DEFAULT_ACK_WAIT_MS,
  encodeGroup,
  type TakenGroup,
  type TrajectoryConsumer,
  type TrajectoryPublisher,
  type TrajectoryStreamOptions,
  trajectoryStreamName,
  trajectorySubject,
} from './trajectory-stream.ts'

/** How long a `group_id` is remembered to drop a second publish of it, ms (JetStream's default window). */
const DUPLICATE_WINDOW_MS: Millis = 120_000

/** Callbacks woken by `notify`; each waiter also has its own deadline. */
class Wakeup {
  readonly waiters = new Set<() => void>()
  notify(): void {
    for (const w of [...this.waiters]) w()
  }
}

/** Resolves at the first `notify` of any of `wakeups`, at `until` on `clock`, or when `signal` aborts. */
function waitFor(clock: Clock, until: Millis, wakeups: Wakeup[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(timer)
      for (const w of wakeups) w.waiters.delete(done)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = clock.setTimeout(done, Math.max(0, until - clock.now()))
    for (const w of wakeups) w.waiters.add(done)
    if (signal?.aborted) done()
    else signal?.addEventListener('abort', done, { once: true })
  })
}

/** One stored group: its bytes as published, and its delivery state. */
interface Stored {
  seq: number
  data: Uint8Array
  /** Deliveries so far (0: never delivered). */
  deliveries: number
  /** While delivered and unacknowledged: when it becomes deliverable again, ms on the buffer's clock. */
  due?: Millis
}

/**
 * The stream of one run inside one process: the same semantics as the JetStream stream (see
 * `trajectory-stream.ts`) on a map of stored bytes. Groups go through the msgpack codec and the
 * boundary check both ways, as over the network; a delivery decodes its own copy, so a learner
 * never shares arrays with the rollout side or with an earlier delivery.
 */
class InProcessTrajectoryBuffer {
  private readonly messages = new Map<number, Stored>()
  private readonly ids = new Map<string, { seq: number; at: Millis }>()
  private lastSeq = 0
  /** Notified on every publish, acknowledgement, removal and configuration change. */
  readonly changed = new Wakeup()
  maxGroups: number
  ackWaitMs: Millis
  constructor(
    readonly name: string,
    options: TrajectoryStreamOptions,
    readonly clock: Clock,
  ) {
    this.maxGroups = options.maxGroups
    this.ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
  }

  configure(options: TrajectoryStreamOptions): void {
    this.maxGroups = options.maxGroups
    this.ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
    this.changed.notify()
  }

  /** Stores `data` under `id`; returns its sequence, or `full` when the bound is reached. */
  append(data: Uint8Array, id: string): number | 'full' {
    const now = this.clock.now()
    for (const [key, entry] of this.ids) {
      if (entry.at > now - DUPLICATE_WINDOW_MS) break // insertion order is time order
      this.ids.delete(key)
    }
    const known = this.ids.get(id)
    if (known) return known.seq
    if (this.messages.size >= this.maxGroups) return 'full'
    const seq = ++this.lastSeq
    this.messages.set(seq, { seq, data: data.slice(), deliveries: 0 })
    this.ids.set(id, { seq, at: now })
    this.changed.notify()
    return seq
  }

  /** Marks up to `max` deliverable groups (never delivered, or past their ack deadline) delivered. */
  deliver(max: number): Stored[] {
    const now = this.clock.now()
    const out: Stored[] = []
    for (const m of this.messages.values()) {
      if (out.length >= max) break
      if (m.due !== undefined && m.due > now) continue
      m.deliveries++
      m.due = now + this.ackWaitMs
      out.push(m)
    }
    return out
  }

  /** Removes a group for good (acknowledged, or invalid). */
  remove(seq: number): void {
    if (this.messages.delete(seq)) this.changed.notify()
  }

  /** Restarts the ack deadline of a delivered group. */
  working(seq: number): void {
    const m = this.messages.get(seq)
    if (m?.due !== undefined) m.due = this.clock.now() + this.ackWaitMs
  }

  /** Groups never delivered. */
  pending(): number {
    let n = 0
    for (const m of this.messages.values()) if (m.deliveries === 0) n++
    return n
  }

  /** The earliest ack deadline of the groups held, if any. */
  nextDue(): Millis | undefined {
    let due: Millis | undefined
    for (const m of this.messages.values())
      if (m.due !== undefined && (due === undefined || m.due < due)) due = m.due
    return due
  }
}

/** The in-process streams of every run, per transport (the roles of one process share its transport). */
interface Streams {
  byName: Map<string, InProcessTrajectoryBuffer>
  /** Notified when a stream is created. */
  created: Wakeup
}

const registry = new WeakMap<InProcessTransport, Streams>()

function streamsOf(transport: InProcessTransport): Streams {
  let s = registry.get(transport)
  if (!s) {
    s = { byName: new Map(), created: new Wakeup() }
    registry.set(transport, s)
  }
  return s
}

/** Creates (or reconfigures) the run's in-process stream on `transport`; returns its name. */
export function ensureInProcessTrajectoryStream(
  transport: InProcessTransport,
  options: TrajectoryStreamOptions,
): string {
  const name = trajectoryStreamName(options.run)
  const streams = streamsOf(transport)
  const existing = streams.byName.get(name)
  if (existing) existing.configure(options)
  else {
    streams.byName.set(name, new InProcessTrajectoryBuffer(name, options, options.clock ?? systemClock))
    streams.created.notify()
  }
  return name
}

/**
 * Publishes groups into the run's in-process stream. While it is full (or not created yet) a
 * publish waits for the event that can make room (an acknowledgement, a new bound, the stream's
 * creation) up to its deadline.
 */
export class InProcessTrajectoryPublisher implements TrajectoryPublisher {
  waits = 0
  private closed = false
  private readonly closing = new Wakeup()
  private readonly name: string
  constructor(
    private readonly transport: InProcessTransport,
    private readonly run: string,
    private readonly clock: Clock = systemClock,
  ) {
    this.name = trajectoryStreamName(run)
  }

  /**
   * Stores the group, then publishes it on `trajectorySubject(run, task)` too, as a JetStream
   * publish is seen there by plain subscribers (observers, tests).
   */
  async publish(group: TrajectoryGroupPayload, timeoutMs: Millis = 600_000): Promise<number> {
    const data = encodeGroup(group)
    const seq = await this.publishBytes(data, group.group_id, timeoutMs)
    this.transport.publishBytes(trajectorySubject(this.run, group.task), data)
    return seq
  }

  /** Publishes raw bytes under the duplicate id `id` (tests use it to send garbage). */
  async publishBytes(data: Uint8Array, id: string, timeoutMs: Millis = 600_000): Promise<number> {
    const start = this.clock.now()
    const deadline = start + timeoutMs
    const streams = streamsOf(this.transport)
    let waited = false
    for (;;) {
      if (this.closed) throw new PublisherClosedError(this.name)
      const buffer = streams.byName.get(this.name)
      const result = buffer?.append(data, id)
      if (typeof result === 'number') return result
      if (buffer && !waited) {
        waited = true
        this.waits++
      }
      if (this.clock.now() >= deadline) {
        if (!buffer) throw new TrajectoryStreamNotFoundError(this.name)
        throw new BufferFullError(this.name, this.clock.now() - start)
      }
      await waitFor(this.clock, deadline, [this.closing, buffer ? buffer.changed : streams.created])
    }
  }

  close(): void {
    this.closed = true
    this.closing.notify()
  }
}

/** The learner's side of the run's in-process stream. */
export class InProcessTrajectoryConsumer implements TrajectoryConsumer {
  invalid = 0
  private constructor(
    private readonly buffer: InProcessTrajectoryBuffer,
    private readonly clock: Clock,
  ) {}

  /**
   * Opens the learner's consumer of the run's stream.
   * @throws TrajectoryStreamNotFoundError when `ensureInProcessTrajectoryStream` has not run.
   */
  static open(
    transport: InProcessTransport,
    run: string,
    clock: Clock = systemClock,
  ): InProcessTrajectoryConsumer {
    const name = trajectoryStreamName(run)
    const buffer = streamsOf(transport).byName.get(name)
    if (!buffer) throw new TrajectoryStreamNotFoundError(name)
    return new InProcessTrajectoryConsumer(buffer, clock)
  }

  async pending(): Promise<number> {
    return this.buffer.pending()
  }

  async take(
    minBatchGroups: number,
    maxBatchGroups: number,
    waitMs: Millis,
    signal?: AbortSignal,
  ): Promise<TakenGroup[]> {
    const out: TakenGroup[] = []
    const deadline = this.clock.now() + waitMs
    for (;;) {
      for (const m of this.buffer.deliver(maxBatchGroups - out.length)) {
        // A copy: the delivery never shares arrays with the stored bytes.
        if (addDelivered(out, { seq: m.seq, deliveries: m.deliveries, data: m.data.slice() }) === 'invalid') {
          this.invalid++
          this.buffer.remove(m.seq)
        }
      }
      if (out.length >= minBatchGroups || this.clock.now() >= deadline || signal?.aborted) return out
      // Wait for a publish, or for the first held group to come back at its ack deadline.
      const due = this.buffer.nextDue()
      await waitFor(
        this.clock,
        due === undefined ? deadline : Math.min(deadline, due),
        [this.buffer.changed],
        signal,
      )
    }
  }

  keepAlive(groups: readonly TakenGroup[]): void {
    for (const g of groups) this.buffer.working(g.seq)
  }

  async ack(groups: readonly TakenGroup[]): Promise<void> {
    for (const g of groups) this.buffer.remove(g.seq)
  }
}
