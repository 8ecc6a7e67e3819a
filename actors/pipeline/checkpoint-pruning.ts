import { readdirSync, rmSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { readAckRecords, readLatestCheckpoint } from './checkpoint-records.ts'
import { CheckpointPruneError } from './errors.ts'

/** What `pruneCheckpoints` did: checkpoint directory names, sorted by step. */
export interface PruneResult {
  /** Step checkpoints deleted. */
  removed: string[]
  /** Step checkpoints left in place. */
  kept: string[]
  /** Step checkpoints that could not be deleted (tried again at the next pruning), with the reason. */
  failed: { name: string; error: string }[]
}

/** The step of a `step-<n>` checkpoint directory name, or undefined for any other name. */
export function checkpointStep(name: string): number | undefined {
  const m = /^step-(\d+)$/.exec(name)
  return m ? Number(m[1]) : undefined
}

/**
 * Deletes the old step checkpoints (`step-<n>/`) of a run's checkpoint directory, keeping:
 * - the one `latest.json` points at (a learner restart resumes from it) and the newest
 *   `keep - 1` older ones, so `keep` step checkpoints in all;
 * - the one of the newest version the ack audit (`acks.jsonl`) records groups as `used` in: the
 *   checkpoint whose weights hold every acknowledged group (normally the latest itself);
 * - every step checkpoint newer than `latest.json` (one being written, or left by a learner that
 *   died before pointing `latest.json` at it: the resumed learner writes it again);
 * - `sft/` and anything else that is not a `step-<n>` directory.
 * Without `latest.json` nothing is deleted. Call it after `latest.json` and the audit record of a
 * new checkpoint are written.
 * @throws CheckpointPruneError when `keep` is not an integer >= 1.
 */
export function pruneCheckpoints(checkpointDir: string, keep: number): PruneResult {
  if (!Number.isInteger(keep) || keep < 1) throw new CheckpointPruneError(checkpointDir, keep)
  const steps = readdirSync(checkpointDir)
    .map((name) => ({ name, step: checkpointStep(name) }))
    .filter((c): c is { name: string; step: number } => c.step !== undefined)
    .filter((c) => statSync(join(checkpointDir, c.name)).isDirectory())
    .sort((a, b) => a.step - b.step)
  const result: PruneResult = { removed: [], kept: [], failed: [] }
  const latest = readLatestCheckpoint(checkpointDir)
  if (!latest) {
    result.kept = steps.map((c) => c.name)
    return result
  }
  const protect = new Set<string>([basename(latest.dir), `step-${latest.version}`])
  const acked = readAckRecords(checkpointDir).filter((r) => r.used.length > 0)
  if (acked.length) protect.add(`step-${Math.max(...acked.map((r) => r.version))}`)
  const older = steps.filter((c) => c.step < latest.version && !protect.has(c.name))
  const keepOlder = new Set(older.slice(Math.max(0, older.length - (keep - 1))).map((c) => c.name))
  for (const c of steps) {
    if (c.step >= latest.version || protect.has(c.name) || keepOlder.has(c.name)) {
      result.kept.push(c.name)
      continue
    }
    try {
      rmSync(join(checkpointDir, c.name), { recursive: true, force: true })
      result.removed.push(c.name)
    } catch (err) {
      result.failed.push({ name: c.name, error: (err as Error).message })
      result.kept.push(c.name)
    }
  }
  return result
}
