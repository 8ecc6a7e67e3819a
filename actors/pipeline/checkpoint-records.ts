import { existsSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'

/** What the loop records next to each checkpoint: which stream messages its weights include. */
export interface PipelineCheckpoint {
  version: number
  /** Stream sequence numbers of the groups acknowledged with this checkpoint. */
  usedSeqs: number[]
  /** Directory of the model checkpoint. */
  dir: string
}

/**
 * One line of `acks.jsonl` in the checkpoint directory: the audit trail of what the learner
 * acknowledged, by stream sequence number. `used` groups were trained on in steps the
 * checkpoint of `version` holds; `dropped` were acknowledged without training (staler than the
 * bound, or malformed); `duplicates` were delivered again after being used (an acknowledgement
 * lost in a reconnect) and skipped.
 */
export interface AckRecord {
  version: number
  used: number[]
  dropped: number[]
  duplicates: number[]
}

/** Reads the audit trail of a checkpoint directory. */
export function readAckRecords(checkpointDir: string): AckRecord[] {
  const f = join(checkpointDir, 'acks.jsonl')
  if (!existsSync(f)) return []
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as AckRecord)
}

/**
 * Reads `latest.json` of a checkpoint directory, if any. Its `dir` is resolved by name inside
 * `checkpointDir` (where the loop writes every checkpoint), whatever path was recorded: a run
 * directory that was copied, moved or opened from another working directory resumes from its own
 * checkpoint, never from the one at the recorded path.
 */
export function readLatestCheckpoint(checkpointDir: string): PipelineCheckpoint | undefined {
  const f = join(checkpointDir, 'latest.json')
  if (!existsSync(f)) return undefined
  const record = JSON.parse(readFileSync(f, 'utf8')) as PipelineCheckpoint
  return { ...record, dir: join(checkpointDir, basename(record.dir)) }
}
