import { readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { NatsServerError } from './errors.ts'

/**
 * The lock of a JetStream store directory: one nats-server opens a store at a time. Two servers on
 * one store (an orphaned server of a `triad run` that died, and the server of its resume) corrupt
 * it, and nats-server itself does not refuse. The file `<store>/triad-server.lock` names the pid of
 * the server process that holds the store (not of the `triad` process that started it: an orphan
 * outlives its parent), its host and the kernel's start time of that process; it is written when
 * the server started and removed when it exited.
 */
export const NATS_STORE_LOCK_FILE = 'triad-server.lock'

/** What `triad-server.lock` holds. */
export interface NatsStoreHolder {
  /** The nats-server's process id. */
  pid: number
  /** `os.hostname()` of its machine. */
  hostname: string
  /** Its start time, clock ticks since boot (field 22 of `/proc/<pid>/stat`); absent without /proc. */
  procStart?: number
}

/** The start time of process `pid` (clock ticks since boot) and whether it is a zombie, or undefined. */
function procStat(pid: number): { zombie: boolean; start: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { zombie: fields[0] === 'Z', start: Number(fields[19]) }
  } catch {
    return undefined
  }
}

/** The holder named by `<storeDir>/triad-server.lock` when it still runs on this host, else undefined. */
export function liveStoreHolder(storeDir: string): NatsStoreHolder | undefined {
  let holder: NatsStoreHolder
  try {
    holder = JSON.parse(readFileSync(join(storeDir, NATS_STORE_LOCK_FILE), 'utf8')) as NatsStoreHolder
  } catch {
    return undefined // no lock, or not one this module wrote
  }
  if (!Number.isInteger(holder.pid) || holder.hostname !== hostname()) return undefined
  try {
    process.kill(holder.pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return undefined
  }
  const stat = procStat(holder.pid)
  if (stat?.zombie) return undefined
  if (stat && holder.procStart !== undefined && stat.start !== holder.procStart) return undefined // pid reused
  return holder
}

/**
 * Refuses a store that a live nats-server holds.
 * @throws NatsServerError naming the store and the holder's pid.
 */
export function checkStoreFree(storeDir: string): void {
  const holder = liveStoreHolder(storeDir)
  if (holder)
    throw new NatsServerError(
      `the JetStream store ${storeDir} is held by nats-server pid ${holder.pid}, which still runs: a second server on it would corrupt it; stop that one first (kill ${holder.pid})`,
    )
}

/**
 * Records that the server process `pid` holds `storeDir`.
 * @throws the file system's error when the lock cannot be written (a full disk).
 */
export function writeStoreLock(storeDir: string, pid: number): void {
  const stat = procStat(pid)
  const holder: NatsStoreHolder = {
    pid,
    hostname: hostname(),
    ...(stat ? { procStart: stat.start } : {}),
  }
  writeFileSync(join(storeDir, NATS_STORE_LOCK_FILE), `${JSON.stringify(holder)}\n`)
}

/** Removes the lock of `storeDir` when it names `pid` (a later server's lock stays). */
export function removeStoreLock(storeDir: string, pid: number): void {
  const file = join(storeDir, NATS_STORE_LOCK_FILE)
  try {
    if ((JSON.parse(readFileSync(file, 'utf8')) as NatsStoreHolder).pid === pid) unlinkSync(file)
  } catch {}
}
