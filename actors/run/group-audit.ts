import type { JetStreamManager } from '@nats-io/jetstream'
import { readAckRecords } from '../pipeline/index.ts'

/**
 * The audit of the no-loss, no-reuse promise of a run's groups (docs/design.md#messaging): every
 * group published on the run's trajectory stream is in exactly one place: used once (in the ack
 * audit trail `acks.jsonl`, trained on in a checkpointed step), dropped with a reason, or still in
 * the stream.
 */
export interface GroupAudit {
  /** Stream sequences trained on in a checkpointed step. */
  used: number[]
  /** Acknowledged without training (staler than the bound, or malformed). */
  dropped: number[]
  /** Delivered again after they were used, and skipped. */
  duplicates: number[]
  /** Still in the stream, waiting for a learner. */
  remaining: number[]
  /** The stream's last sequence: how many groups were published. */
  published: number
  /** Sequences used in two checkpointed steps (trained twice). Clean: none. */
  twice: number[]
  /** Sequences in no place at all. Clean: none. */
  lost: number[]
  /** Sequences both dropped and used, or skipped as duplicates but never used. Clean: none. */
  inconsistent: number[]
}

/** True when the audit found nothing trained twice, lost or inconsistent. */
export function auditIsClean(audit: GroupAudit): boolean {
  return audit.twice.length === 0 && audit.lost.length === 0 && audit.inconsistent.length === 0
}

/**
 * Audits the groups of a run: its checkpoints folder's `acks.jsonl` against the trajectory stream
 * `stream` on the server `jsm` talks to.
 * @throws the server's error when the stream cannot be read.
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
  const usedSet = new Set(used)
  const twice = [...new Set(used.filter((seq, i) => used.indexOf(seq) !== i))]
  const inconsistent = [
    ...new Set([...dropped.filter((s) => usedSet.has(s)), ...duplicates.filter((s) => !usedSet.has(s))]),
  ]
  const state = (await jsm.streams.info(stream)).state
  const remaining: number[] = []
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    try {
      await jsm.streams.getMessage(stream, { seq })
      remaining.push(seq)
    } catch {}
  }
  const accounted = new Set([...used, ...dropped, ...remaining])
  const lost: number[] = []
  for (let seq = 1; seq <= state.last_seq; seq++) if (!accounted.has(seq)) lost.push(seq)
  return { used, dropped, duplicates, remaining, published: state.last_seq, twice, lost, inconsistent }
}

/**
 * The audit as one line: `group audit: 12 published, 9 used, 1 dropped, 2 still in the
 * stream, 0 trained twice, 0 lost: clean`.
 */
export function groupAuditLine(audit: GroupAudit): string {
  const clean = auditIsClean(audit)
  return `group audit: ${audit.published} published, ${new Set(audit.used).size} used, ${audit.dropped.length} dropped, ${audit.remaining.length} still in the stream, ${audit.twice.length} trained twice${audit.twice.length ? ` (${audit.twice.join(', ')})` : ''}, ${audit.lost.length} lost${audit.lost.length ? ` (${audit.lost.join(', ')})` : ''}: ${clean ? 'clean' : 'NOT clean'}`
}
