import {
  checkToken,
  type Envelope,
  encodeEnvelope,
  MessageRegistry,
  type Millis,
  TrajectoryGroup,
  type TrajectoryGroupPayload,
} from '../../protocols/index.ts'
import type { Clock } from '../runtime/index.ts'

/**
 * The trajectory stream of a run: the bounded buffer between the rollout side (publishers) and the
 * learner (one consumer), with the semantics of docs/design.md#messaging-and-wire-protocol and
 * docs/design.md#algorithms (asynchronous pipeline):
 *
 * - bounded: at most `maxGroups` groups are held (published and not yet acknowledged); a publish
 *   into a full buffer waits for room, up to its deadline (`BufferFullError`);
 * - work queue: a group leaves the stream only when the learner acknowledges it, which it does
 *   once a checkpoint holds the step that used it;
 * - redelivery: a group taken and not acknowledged within `ackWaitMs` (unless kept alive) is
 *   delivered again, to the same or a restarted learner, with its stream sequence unchanged and
 *   its redelivery count raised;
 * - a message that is not a valid `trajectory.group` is dropped for good and counted;
 * - publishing the same `group_id` twice stores it once (duplicate window).
 *
 * Two implementations (`open-trajectory-stream.ts` picks one from the transport): a JetStream
 * stream (`jetstream-trajectory-stream.ts`, survives process and server restarts) and an
 * in-process buffer (`in-process-trajectory-stream.ts`, for one-process runs).
 */

/** The name of a run's trajectory stream (the JetStream stream; the in-process buffer's key). */
export const trajectoryStreamName = (run: string) =>
  `TRIAD_${checkToken(run, 'run id').replace(/-/g, '_')}_TRAJECTORIES`

/** The subject a group of `task` is published on: `triad.<run>.trajectory.done.<task>`. */
export const trajectorySubject = (run: string, task: string) =>
  `triad.${checkToken(run, 'run id')}.trajectory.done.${checkToken(task, 'task')}`

/** Options of the trajectory stream. */
export interface TrajectoryStreamOptions {
  run: string
  /**
   * Buffer bound: most groups held in the stream (published and not yet acknowledged by the
   * learner). Publishers wait while it is full.
   */
  maxGroups: number
  /** How long a fetched, unacknowledged group stays with the learner before redelivery, ms (default 120,000). */
  ackWaitMs?: Millis
  /** The in-process buffer's clock for ack deadlines (a NATS server keeps its own time). */
  clock?: Clock
}

/** Default of `TrajectoryStreamOptions.ackWaitMs`. */
export const DEFAULT_ACK_WAIT_MS: Millis = 120_000

/** The rollout side of the stream. */
export interface TrajectoryPublisher {
  /** Publishes that had to wait for room. */
  readonly waits: number
  /**
   * Publishes one group; resolves with its stream sequence number (the same number again for a
   * `group_id` already stored).
   * @throws BufferFullError when the stream stays full for `timeoutMs` (default 600,000 ms);
   *   PublisherClosedError once `close` was called (a publish waiting for room fails at once).
   */
  publish(group: TrajectoryGroupPayload, timeoutMs?: Millis): Promise<number>
  /** Ends the publisher: waiting and later publishes fail with `PublisherClosedError`. */
  close(): void
}

/** A group taken from the stream. The consumer that returned it acknowledges it. */
export interface TakenGroup {
  /** Stream sequence number (unique per group within the stream). */
  seq: number
  /** How many times it was delivered before (0 on the first delivery). */
  redeliveries: number
  group: TrajectoryGroupPayload
}

/** The learner's side of the stream. */
export interface TrajectoryConsumer {
  /** Messages that failed validation (dropped from the stream, never redelivered). */
  readonly invalid: number
  /** Groups in the stream not yet delivered. */
  pending(): Promise<number>
  /**
   * Waits until at least `minBatchGroups` groups are ready (or `waitMs` passes), then returns every
   * ready group up to `maxBatchGroups`. Returns fewer than `minBatchGroups` only at the deadline, or at once
   * when `signal` aborts (a stopping learner): then with the groups taken so far, which stay
   * unacknowledged like any other.
   */
  take(
    minBatchGroups: number,
    maxBatchGroups: number,
    waitMs: Millis,
    signal?: AbortSignal,
  ): Promise<TakenGroup[]>
  /** Restarts the ack deadline of groups held across several steps. */
  keepAlive(groups: readonly TakenGroup[]): void
  /** Acknowledges groups: they leave the stream for good. */
  ack(groups: readonly TakenGroup[]): Promise<void>
}

const groupRegistry = new MessageRegistry([TrajectoryGroup])

/** The wire form of a group (a `trajectory.group` envelope, msgpack). */
export function encodeGroup(group: TrajectoryGroupPayload): Uint8Array {
  return encodeEnvelope(TrajectoryGroup.make(group))
}

/**
 * Decodes and validates one stream message.
 * @throws ProtocolError (a `ValidationError` or a decode error) for a message that is not a valid group.
 */
export function decodeGroup(bytes: Uint8Array): TrajectoryGroupPayload {
  const env: Envelope = groupRegistry.parse(bytes)
  return env.payload as TrajectoryGroupPayload
}

/** One message as a stream delivers it to `take`. */
export interface Delivered {
  /** Stream sequence number. */
  seq: number
  /** Deliveries so far, this one included (1 on the first). */
  deliveries: number
  /** The message bytes (decoded as they are: pass a copy where they must not be shared). */
  data: Uint8Array
}

/**
 * Adds one delivered message to the groups a `take` hands out, by the rules both streams share:
 * a message that is not a valid `trajectory.group` gives `'invalid'` (the caller drops it for good
 * and counts it); a group already in `out` (redelivered while this `take` held it) is skipped and
 * gives undefined; any other is appended to `out` and returned, with `redeliveries` the
 * deliveries before this one.
 */
export function addDelivered(out: TakenGroup[], delivered: Delivered): TakenGroup | 'invalid' | undefined {
  let group: TrajectoryGroupPayload
  try {
    group = decodeGroup(delivered.data)
  } catch {
    return 'invalid'
  }
  if (out.some((g) => g.seq === delivered.seq)) return undefined
  const taken: TakenGroup = { seq: delivered.seq, redeliveries: Math.max(0, delivered.deliveries - 1), group }
  out.push(taken)
  return taken
}
