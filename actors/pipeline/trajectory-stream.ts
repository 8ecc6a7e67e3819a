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
import {
  checkToken,
  type Envelope,
  encodeEnvelope,
  MessageRegistry,
  type Millis,
  TrajectoryGroup,
  type TrajectoryGroupPayload,
} from '../../protocols/index.ts'
import { type Clock, sleep, systemClock } from '../runtime/clock.ts'
import { BufferFullError } from './errors.ts'

/** The JetStream stream of a run's trajectory groups. */
export const trajectoryStreamName = (run: string) =>
  `TRIAD_${checkToken(run, 'run id').replace(/-/g, '_')}_TRAJECTORIES`

/** Options of the trajectory stream. */
export interface TrajectoryStreamOptions {
  run: string
  /**
   * Buffer bound: most groups held in the stream (published and not yet acknowledged by the
   * learner). Publishers wait while it is full.
   */
  maxGroups: number
  /** How long a fetched, unacknowledged group stays with the learner before redelivery, ms. */
  ackWaitMs?: Millis
}

/**
 * Creates (or updates) the run's trajectory stream: work-queue retention (a group leaves the
 * stream when the learner acknowledges it), `discard: new` at `maxGroups` (so a full buffer makes
 * publishers wait instead of losing old groups), file storage (survives a server restart).
 */
export async function ensureTrajectoryStream(
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
  }
  try {
    await jsm.streams.info(name)
    await jsm.streams.update(name, config)
  } catch (err) {
    if (!/not found/i.test(String((err as Error).message))) throw err
    await jsm.streams.add(config)
  }
  const durable = 'learner'
  try {
    await jsm.consumers.info(name, durable)
  } catch {
    await jsm.consumers.add(name, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      ack_wait: (options.ackWaitMs ?? 120_000) * 1_000_000,
      max_ack_pending: Math.max(options.maxGroups, 1),
      max_deliver: -1,
    })
  }
  return name
}

/**
 * Publishes trajectory groups with back-pressure: while the stream is full the publisher waits
 * (retrying with backoff) until the learner consumes, or fails at the deadline.
 */
export class TrajectoryPublisher {
  /** Publishes that had to wait for room. */
  waits = 0
  private readonly js: JetStreamClient
  constructor(
    nc: NatsConnection,
    private readonly run: string,
    private readonly clock: Clock = systemClock,
  ) {
    this.js = jetstream(nc as never)
  }

  /**
   * Publishes one group; resolves with its stream sequence number.
   * @throws BufferFullError when the stream stays full for `timeoutMs`.
   */
  async publish(group: TrajectoryGroupPayload, timeoutMs: Millis = 600_000): Promise<number> {
    const data = encodeEnvelope(TrajectoryGroup.make(group))
    const subject = `triad.${this.run}.trajectory.done.${checkToken(group.task, 'task')}`
    const start = this.clock.now()
    let pause = 20
    let waited = false
    for (;;) {
      try {
        const ack = await this.js.publish(subject, data, { msgID: group.group_id, timeout: 10_000 })
        return ack.seq
      } catch (err) {
        const message = String((err as Error).message)
        const full = /maximum messages exceeded|maximum bytes exceeded/i.test(message)
        const transient = full || /timeout|no responders|disconnect|connection/i.test(message)
        if (!transient) throw err
        if (full && !waited) {
          waited = true
          this.waits++
        }
        const elapsed = this.clock.now() - start
        if (elapsed >= timeoutMs) {
          if (full) throw new BufferFullError(trajectoryStreamName(this.run), elapsed)
          throw err
        }
        await sleep(this.clock, Math.min(pause, timeoutMs - elapsed))
        pause = Math.min(pause * 2, 500)
      }
    }
  }
}

/** A group taken from the stream, with what is needed to acknowledge it later. */
export interface TakenGroup {
  /** Stream sequence number (unique per group within the stream). */
  seq: number
  /** How many times it was delivered before (0 on the first delivery). */
  redeliveries: number
  group: TrajectoryGroupPayload
  msg: JsMsg
}

const groupRegistry = new MessageRegistry([TrajectoryGroup])

/**
 * The learner's side of the stream: takes every available group once at least a minimum is
 * ready; acknowledges only when told (after the step that used them is safe in a checkpoint).
 */
export class TrajectoryConsumer {
  /** Messages that failed validation (terminated, never redelivered). */
  invalid = 0
  private constructor(
    private readonly consumer: Awaited<ReturnType<JetStreamClient['consumers']['get']>>,
    private readonly clock: Clock,
  ) {}

  static async open(
    nc: NatsConnection,
    run: string,
    clock: Clock = systemClock,
  ): Promise<TrajectoryConsumer> {
    const js = jetstream(nc as never)
    const consumer = await js.consumers.get(trajectoryStreamName(run), 'learner')
    return new TrajectoryConsumer(consumer, clock)
  }

  /** Groups available and not yet delivered. */
  async pending(): Promise<number> {
    return (await this.consumer.info()).num_pending
  }

  /**
   * Waits until at least `minGroups` groups are ready (or `waitMs` passes), then returns every
   * ready group up to `maxGroups`. Returns fewer than `minGroups` only at the deadline.
   */
  async take(minGroups: number, maxGroups: number, waitMs: Millis): Promise<TakenGroup[]> {
    const out: TakenGroup[] = []
    const deadline = this.clock.now() + waitMs
    const pull = async (max: number, expiresMs: number) => {
      const iter = await this.consumer.fetch({ max_messages: max, expires: Math.max(1_000, expiresMs) })
      for await (const m of iter) {
        let env: Envelope
        try {
          env = groupRegistry.parse(m.data)
        } catch {
          this.invalid++
          m.term()
          continue
        }
        if (out.some((g) => g.seq === m.seq)) continue // redelivered while we held it
        out.push({
          seq: m.seq,
          redeliveries: Math.max(0, m.info.deliveryCount - 1),
          group: env.payload as TrajectoryGroupPayload,
          msg: m,
        })
      }
    }
    // Ask for just the missing minimum, so the fetch returns as soon as it is there.
    while (out.length < minGroups && this.clock.now() < deadline)
      await pull(minGroups - out.length, Math.min(2_000, deadline - this.clock.now()))
    const extra = out.length < maxGroups ? await this.pending() : 0
    if (extra > 0) await pull(Math.min(extra, maxGroups - out.length), 1_000)
    return out
  }

  /** Extends the ack deadline of groups held across several steps. */
  keepAlive(groups: readonly TakenGroup[]): void {
    for (const g of groups) g.msg.working()
  }

  /** Acknowledges groups: they leave the stream for good. */
  async ack(groups: readonly TakenGroup[]): Promise<void> {
    await Promise.all(groups.map((g) => g.msg.ackAck().catch(() => false)))
  }
}

/** The stream's JetStream manager (admin operations in tests and `triad status`). */
export function streamManager(nc: NatsConnection): Promise<JetStreamManager> {
  return jetstreamManager(nc as never)
}
