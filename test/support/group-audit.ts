import assert from 'node:assert/strict'
import type { JetStreamManager } from '@nats-io/jetstream'
import { readAckRecords } from '../../actors/index.ts'

/** What `auditGroups` found: stream sequences by fate. */
export interface GroupAudit {
  /** Trained on in a checkpointed step (each exactly once). */
  used: number[]
  /** Acknowledged without training (staler than the bound, or malformed). */
  dropped: number[]
  /** Delivered again after they were used, and skipped. */
  duplicates: number[]
  /** Still in the stream, waiting for a learner. */
  remaining: number[]
  /** The stream's last sequence: how many groups were published. */
  published: number
}

/**
 * The audit of the no-loss, no-reuse promise: every group ever published on the run's trajectory
 * stream `stream` is in exactly one place: used once (in the ack audit trail `acks.jsonl` of
 * `checkpointDir`, trained on in a checkpointed step), dropped with a reason, or still in the
 * stream. A group skipped as a duplicate must have been used. Fails the test otherwise.
 */
export async function auditGroups(
  checkpointDir: string,
  jsm: JetStreamManager,
  stream: string,
): Promise<GroupAudit> {
  const records = readAckRecords(checkpointDir)
  const used = records.flatMap((r) => r.used)
  const dropped = records.flatMap((r) => r.dropped)
  const duplicates = records.flatMap((r) => r.duplicates)
  const twice = used.filter((seq, i) => used.indexOf(seq) !== i)
  assert.deepEqual(twice, [], `groups trained on in two checkpointed steps: ${twice.join(', ')}`)
  for (const seq of duplicates)
    assert.ok(used.includes(seq), `group ${seq} skipped as a duplicate but never used`)
  for (const seq of dropped) assert.ok(!used.includes(seq), `group ${seq} both dropped and used`)
  const state = (await jsm.streams.info(stream)).state
  const remaining: number[] = []
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    try {
      await jsm.streams.getMessage(stream, { seq })
      remaining.push(seq)
    } catch {}
  }
  const accounted = new Set([...used, ...dropped, ...remaining])
  for (let seq = 1; seq <= state.last_seq; seq++) assert.ok(accounted.has(seq), `group ${seq} was lost`)
  return { used, dropped, duplicates, remaining, published: state.last_seq }
}
