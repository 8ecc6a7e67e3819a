import assert from 'node:assert/strict'
import type { JetStreamManager } from '@nats-io/jetstream'
import { auditGroups as auditRunGroups, type GroupAudit } from '../../actors/index.ts'

/**
 * The audit of the no-loss, no-reuse promise as a test's check: the run's own audit
 * (`actors/run/group-audit.ts`: every group ever published on the trajectory stream `stream` is
 * used once in the ack audit trail of `checkpointDir`, dropped with a reason, or still in the
 * stream; a group skipped as a duplicate was used), failing the test on anything trained twice,
 * inconsistent or lost. Returns the audit.
 */
export async function auditGroups(
  checkpointDir: string,
  jsm: JetStreamManager,
  stream: string,
): Promise<GroupAudit> {
  const audit = await auditRunGroups(checkpointDir, jsm, stream)
  assert.deepEqual(audit.twice, [], `groups trained on in two checkpointed steps: ${audit.twice.join(', ')}`)
  assert.deepEqual(
    audit.inconsistent,
    [],
    `groups both dropped and used, or skipped as duplicates but never used: ${audit.inconsistent.join(', ')}`,
  )
  assert.deepEqual(audit.lost, [], `groups lost: ${audit.lost.join(', ')}`)
  return audit
}
