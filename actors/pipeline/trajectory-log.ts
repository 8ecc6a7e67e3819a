import { createHash } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { decode, encode, type TrajectoryGroupPayload } from '../../protocols/index.ts'
import { asWriteError } from '../runtime/index.ts'
import { TrajectoryLogError } from './errors.ts'
import { decodeGroup, encodeGroup, type TakenGroup } from './trajectory-stream.ts'

/**
 * The run's own copy of the trajectories the learner trained on (`trajectories.bin` in the run
 * directory), appended as each step takes its groups. The stream cannot serve as the record: it
 * has work-queue retention (a group leaves it when acknowledged) and in-process runs keep their
 * buffer in memory only; so the learner, the one place every trained group passes in either
 * transport, writes it.
 *
 * Format: records one after another, each a 4-byte little-endian length then that many bytes of
 * msgpack `{seq, step, group}`, `group` the group's wire form (a `trajectory.group` envelope,
 * `encodeGroup`). A record cut short (the learner killed while writing) ends the file as read.
 */
export const TRAJECTORY_LOG_FILE = 'trajectories.bin'

/** One record of the log. */
export interface TrajectoryLogRecord {
  /** The group's stream sequence number. */
  seq: number
  /** The learner version the step that used it produced (its first step gives 1). */
  step: number
  group: TrajectoryGroupPayload
}

/**
 * Appends the groups of one step to the log at `file` (made with its folder when missing).
 * @throws RunWriteError naming `file` when it cannot be written (a full disk: not restartable).
 */
export function appendTrajectoryLog(file: string, groups: readonly TakenGroup[], step: number): void {
  if (groups.length === 0) return
  mkdirSync(dirname(file), { recursive: true })
  const parts: Uint8Array[] = []
  for (const t of groups) {
    const body = encode({ seq: t.seq, step, group: encodeGroup(t.group) })
    const head = new Uint8Array(4)
    new DataView(head.buffer).setUint32(0, body.length, true)
    parts.push(head, body)
  }
  try {
    appendFileSync(file, Buffer.concat(parts))
  } catch (err) {
    throw asWriteError(err, 'learner', file)
  }
}

/**
 * Reads the log at `file`. A group trained twice (its step was lost to a stop before the
 * checkpoint that would have committed it, and the same message was delivered and trained again
 * after the resume) is given once, at its last step, which is the one in the final weights. Two
 * records are the same group when their sequence and their group bytes are equal (a resumed
 * one-process run numbers its new in-memory stream from 1 again, so a sequence alone is not).
 * @returns the records in the order of their last step; `truncated` is true when the last record
 *   was cut short (and left out).
 * @throws TrajectoryLogError when the file is missing or a whole record does not decode.
 */
export function readTrajectoryLog(file: string): { records: TrajectoryLogRecord[]; truncated: boolean } {
  if (!existsSync(file)) throw new TrajectoryLogError(file, 'no such file')
  const bytes = new Uint8Array(readFileSync(file))
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const byKey = new Map<string, TrajectoryLogRecord>()
  let at = 0
  let index = 0
  while (at + 4 <= bytes.length) {
    const n = view.getUint32(at, true)
    if (at + 4 + n > bytes.length) break
    let record: TrajectoryLogRecord
    let raw: { seq: number; step: number; group: Uint8Array }
    try {
      raw = decode(bytes.subarray(at + 4, at + 4 + n)) as {
        seq: number
        step: number
        group: Uint8Array
      }
      record = { seq: raw.seq, step: raw.step, group: decodeGroup(raw.group) }
    } catch (err) {
      throw new TrajectoryLogError(file, `record ${index} (byte ${at}) does not decode`, err)
    }
    const key = `${record.seq}:${createHash('sha1').update(raw.group).digest('hex')}`
    byKey.delete(key)
    byKey.set(key, record)
    at += 4 + n
    index++
  }
  return { records: [...byKey.values()], truncated: at < bytes.length }
}
