import {
  AckPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { Millis, TrajectoryGroupPayload } from '../../protocols/index.ts'
import { type Clock, streamReplicas, systemClock } from '../runtime/index.ts'
import { BufferFullError, PublisherClosedError } from './errors.ts'
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

/** The durable consumer the learner reads the stream with. */
const DURABLE = 'learner'

/**
 * Creates (or updates) the run's trajectory stream on JetStream: work-queue retention (a group
 * leaves the stream when the learner acknowledges it), `discard: new` at `maxGroups` (so a full
 * buffer makes publishers wait instead of losing old groups), file storage (survives a server
 * restart), 3 replicas on a cluster of three or more servers (`streamReplicas`), and the learner's durable consumer (explicit acks, `ackWaitMs`).
 */
export async function ensureJetStreamTrajectoryStream(
  nc: NatsConnection,
  options: TrajectoryStreamOptions,
): Promise<string> {
  const jsm = await jetstreamManager(nc as never)
  const name = trajectoryStreamName(options.run)
  const config = {
    name,
    subjects: [`triad.${options.run}.trajectory.done.>`],
    retention: RetentionPolicy.Workqueue,
    discard: DiscardPolicy.New,
    max_msgs: options.maxGroups,
    storage: StorageType.File,
    // On a cluster of three or more servers, 3 replicas: the buffer survives a server taken away.
    num_replicas: streamReplicas(nc),
  }
  try {
    await jsm.streams.info(name)
    await jsm.streams.update(name, config)
  } catch (err) {
    if (!/not found/i.test(String((err as Error).message))) throw err
    await jsm.streams.add(config)
  }
  const ackWait = (options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS) * 1_000_000
  let existing: Awaited<ReturnType<typeof jsm.consumers.info>> | undefined
  try {
    existing = await jsm.consumers.info(name, DURABLE)
  } catch {}
  if (!existing)
    await jsm.consumers.add(name, {
      durable_name: DURABLE,
      ack_policy: AckPolicy.Explicit,
      ack_wait: ackWait,
      max_ack_pending: Math.max(options.maxGroups, 1),
      max_deliver: -1,
    })
  // A run resumed by a newer triad keeps its consumer (and its acknowledgements) with this ack wait.
  else if (existing.config.ack_wait !== ackWait)
    await jsm.consumers.update(name, DURABLE, { ack_wait: ackWait })
  return name
}

/**
 * Publishes trajectory groups to JetStream with back-pressure: while the stream is full the
 * publisher waits (retrying with backoff) until the learner consumes, or fails at the deadline.
 * A stream that does not exist yet (JetStream answers "not enabled" for a subject no stream
 * takes), or a server that is reconnecting, is waited for the same way.
 */
export class JetStreamTrajectoryPublisher implements TrajectoryPublisher {
  waits = 0
  private readonly js: JetStreamClient
  private closed = false
  /** Wakes the backoff pause of publishes in flight (on close). */
  private readonly wake = new Set<() => void>()
  constructor(
    nc: NatsConnection,
    private readonly run: string,
    private readonly clock: Clock = systemClock,
  ) {
    this.js = jetstream(nc as never)
  }

  async publish(group: TrajectoryGroupPayload, timeoutMs: Millis = 600_000): Promise<number> {
    const stream = trajectoryStreamName(this.run)
    const data = encodeGroup(group)
    const subject = trajectorySubject(this.run, group.task)
    const start = this.clock.now()
    let pause = 20
    let waited = false
    for (;;) {
      if (this.closed) throw new PublisherClosedError(stream)
      try {
        const ack = await this.js.publish(subject, data, { msgID: group.group_id, timeout: 10_000 })
        return ack.seq
      } catch (err) {
        const message = String((err as Error).message)
        const full = /maximum messages exceeded|maximum bytes exceeded/i.test(message)
        // No stream on the subject yet reads as "jetstream is not enabled" (no responders).
        const transient =
          full ||
          (err as Error).name === 'JetStreamNotEnabled' ||
          /timeout|no responders|disconnect|connection/i.test(message)
        if (!transient) throw err
        if (full && !waited) {
          waited = true
          this.waits++
        }
        const elapsed = this.clock.now() - start
        if (elapsed >= timeoutMs) {
          if (full) throw new BufferFullError(stream, elapsed)
          throw err
        }
        await this.pause(Math.min(pause, timeoutMs - elapsed))
        pause = Math.min(pause * 2, 500)
      }
    }
  }

  close(): void {
    this.closed = true
    for (const w of this.wake) w()
  }

  /** A backoff pause that `close` cuts short. */
  private pause(ms: Millis): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer)
        this.wake.delete(done)
        resolve()
      }
      const timer = this.clock.setTimeout(done, ms)
      this.wake.add(done)
    })
  }
}

/**
 * The learner's side of the JetStream stream: pulls from the durable consumer, acknowledges only
 * when told.
 */
export class JetStreamTrajectoryConsumer implements TrajectoryConsumer {
  invalid = 0
  /** The JetStream message behind each group handed out (to ack it or keep it alive). */
  private readonly messages = new WeakMap<TakenGroup, JsMsg>()
  private constructor(
    private readonly consumer: Awaited<ReturnType<JetStreamClient['consumers']['get']>>,
    private readonly clock: Clock,
  ) {}

  /**
   * Opens the learner's consumer of the run's stream.
   * @throws the JetStream error ("stream not found") when `ensureJetStreamTrajectoryStream` has not run.
   */
  static async open(
    nc: NatsConnection,
    run: string,
    clock: Clock = systemClock,
  ): Promise<JetStreamTrajectoryConsumer> {
    const js = jetstream(nc as never)
    const consumer = await js.consumers.get(trajectoryStreamName(run), DURABLE)
    return new JetStreamTrajectoryConsumer(consumer, clock)
  }

  async pending(): Promise<number> {
    return (await this.consumer.info()).num_pending
  }

  async take(
    minBatchGroups: number,
    maxBatchGroups: number,
    waitMs: Millis,
    signal?: AbortSignal,
  ): Promise<TakenGroup[]> {
    const out: TakenGroup[] = []
    const deadline = this.clock.now() + waitMs
    const pull = async (max: number, expiresMs: number) => {
      if (signal?.aborted) return
      const iter = await this.consumer.fetch({ max_messages: max, expires: Math.max(1_000, expiresMs) })
      // An abort ends this pull's iteration at once; a group the server sends it later is
      // redelivered after its ack deadline.
      const stop = () => iter.stop()
      if (signal?.aborted) stop()
      else signal?.addEventListener('abort', stop, { once: true })
      try {
        await this.collect(iter, out)
      } finally {
        signal?.removeEventListener('abort', stop)
      }
    }
    // Ask for just the missing minimum, so the fetch returns as soon as it is there.
    while (out.length < minBatchGroups && this.clock.now() < deadline && !signal?.aborted)
      await pull(minBatchGroups - out.length, Math.min(2_000, deadline - this.clock.now()))
    if (signal?.aborted) return out
    const extra = out.length < maxBatchGroups ? await this.pending() : 0
    if (extra > 0) await pull(Math.min(extra, maxBatchGroups - out.length), 1_000)
    return out
  }

  /** Adds the valid groups of one fetch to `out` (invalid ones are terminated and counted). */
  private async collect(iter: AsyncIterable<JsMsg>, out: TakenGroup[]): Promise<void> {
    for await (const m of iter) {
      const taken = addDelivered(out, { seq: m.seq, deliveries: m.info.deliveryCount, data: m.data })
      if (taken === 'invalid') {
        this.invalid++
        m.term()
      } else if (taken) this.messages.set(taken, m)
    }
  }

  keepAlive(groups: readonly TakenGroup[]): void {
    for (const g of groups) this.messages.get(g)?.working()
  }

  async ack(groups: readonly TakenGroup[]): Promise<void> {
    await Promise.all(
      groups.map((g) =>
        this.messages
          .get(g)
          ?.ackAck()
          .catch(() => false),
      ),
    )
  }
}

/** The stream's JetStream manager (admin operations in tests and `triad status`). */
export function streamManager(nc: NatsConnection): Promise<JetStreamManager> {
  return jetstreamManager(nc as never)
}
