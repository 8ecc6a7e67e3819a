import { randomBytes } from 'node:crypto'
import { readFileSync, unlinkSync } from 'node:fs'
import { link, readFile, unlink, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { type Clock, systemClock } from '../runtime/index.ts'
import { RunLockContendedError, RunLockedError } from './errors.ts'

/**
 * The lock of a run directory: one `triad run` (a start or a resume) works in a run directory at a
 * time.
 *
 * Mechanism: `<run>/run.lock` holds the holder's pid, host name, start time and (on Linux) the
 * kernel's start time of that process, and is made with `link(2)` from a complete temporary file,
 * which fails when the lock exists: creation is atomic (O_EXCL semantics, also on NFS) and a reader
 * never sees a half-written lock. A lock whose holder is dead (same host: no such pid, a zombie, or
 * the pid now belongs to a process started later) is stale and is taken over, under a second
 * short-lived lock `run.lock.takeover` so that two processes never both take it over. The holder
 * removes it when the run ends (and, failing that, when its process exits normally); after a
 * SIGKILL it stays, stale, until the next run takes it over.
 *
 * Not proper-lockfile: its locks carry no pid (an error could not name the holder) and go stale
 * when their mtime is not refreshed for 10 s, which a run's event loop busy with tensor work in one
 * process can miss: a live run would lose its lock.
 */

/** The file name of a run directory's lock. */
export const RUN_LOCK_FILE = 'run.lock'

/**
 * The file name of the lock the learner of a run holds in its run directory while it runs (same
 * mechanism, `lockRunDir(path, { file: LEARNER_LOCK_FILE })`). `triad run` is not the only writer
 * of a run directory: after a `kill -9` of `triad run` its learner stops by itself (parent-death
 * signal) but may still write its last checkpoint for a few seconds, so taking the run lock also
 * refuses while this lock's holder lives.
 */
export const LEARNER_LOCK_FILE = 'learner.lock'

/** Who holds a run directory's lock: the JSON content of `run.lock`. */
export interface RunLockHolder {
  /** Process id of the holder. */
  pid: number
  /** `os.hostname()` of the holder's machine; its pid is checked only on that host. */
  hostname: string
  /** When the lock was taken, ms since the Unix epoch. */
  started: number
  /**
   * The holder process's start time, clock ticks since boot (field 22 of `/proc/<pid>/stat`);
   * absent where there is no `/proc`. It tells the holder from a later process with the same pid.
   */
  procStart?: number
}

/** The lock a run holds while it works in its directory. */
export interface RunLock {
  /** The lock file, `<run>/run.lock`. */
  readonly file: string
  /** What the file holds. */
  readonly holder: RunLockHolder
  /** The stale lock this one replaced (its holder was dead), if any. */
  readonly tookOver?: RunLockHolder
  /** Removes the lock file if it is still this lock (idempotent). */
  release(): Promise<void>
}

/** Options of `lockRunDir`. */
export interface LockRunDirOptions {
  /** Where the line about a stale lock taken over goes (default: nowhere). */
  log?: (line: string) => void
  clock?: Clock
  /**
   * The lock file's name in the directory (default `RUN_LOCK_FILE`). Taking `RUN_LOCK_FILE` also
   * refuses while a live process holds `LEARNER_LOCK_FILE`.
   */
  file?: string
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code

/** `[state letter, start time in clock ticks since boot]` of a process from /proc, or undefined. */
function procStat(pid: number): { state: string; start: number } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: fields[0]!, start: Number(fields[19]) }
}

/** Whether the holder of a lock still runs: `elsewhere` when it is on another host. */
export function lockHolderState(holder: RunLockHolder): 'alive' | 'dead' | 'elsewhere' {
  if (holder.hostname !== hostname()) return 'elsewhere'
  try {
    process.kill(holder.pid, 0)
  } catch (err) {
    if (errno(err) === 'ESRCH') return 'dead'
    // EPERM: it exists and belongs to another user.
  }
  const stat = procStat(holder.pid)
  if (stat?.state === 'Z') return 'dead'
  if (stat && holder.procStart !== undefined && stat.start !== holder.procStart) return 'dead' // pid reused
  return 'alive'
}

/** Parses a lock file's text; undefined when it is not a lock this module wrote. */
function parseHolder(text: string): RunLockHolder | undefined {
  try {
    const h = JSON.parse(text) as Partial<RunLockHolder>
    if (Number.isInteger(h.pid) && typeof h.hostname === 'string' && typeof h.started === 'number')
      return h as RunLockHolder
  } catch {}
  return undefined
}

/** The lock file's text, or undefined when there is none. */
async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined
    throw err
  }
}

/**
 * Who holds the lock of the run directory `path`, or undefined when it is not locked.
 * @throws RunLockedError (holder undefined) when `run.lock` is not a lock this code wrote.
 */
export async function readRunLock(path: string): Promise<RunLockHolder | undefined> {
  const file = join(path, RUN_LOCK_FILE)
  const text = await readText(file)
  if (text === undefined) return undefined
  const holder = parseHolder(text)
  if (!holder) throw new RunLockedError(path, file, undefined)
  return holder
}

/** Throws RunLockedError when `holder` (read from `file`) still runs or cannot be checked. */
function refuseLive(path: string, file: string, text: string): RunLockHolder {
  const holder = parseHolder(text)
  if (!holder) throw new RunLockedError(path, file, undefined)
  const state = lockHolderState(holder)
  if (state !== 'dead') throw new RunLockedError(path, file, holder, state === 'elsewhere')
  return holder
}

/**
 * Takes the lock of the run directory `path` (`<path>/run.lock`). A lock whose holder is dead is
 * taken over, with one line to `log` that names it. When the directory is locked by a live
 * process, nothing in it is changed.
 * @throws RunLockedError naming the directory and the holder's pid when a live process (or one on
 *   another host) holds it, or when `run.lock` is not a lock this code wrote;
 *   RunLockContendedError when other processes kept taking and releasing the lock through eight
 *   attempts.
 */
export async function lockRunDir(path: string, options: LockRunDirOptions = {}): Promise<RunLock> {
  const name = options.file ?? RUN_LOCK_FILE
  const file = join(path, name)
  // A live holder is refused before anything is written.
  const existing = await readText(file)
  if (existing !== undefined) refuseLive(path, file, existing)
  if (name === RUN_LOCK_FILE) {
    // The learner of an earlier run that still runs (orphaned by a kill -9 of its triad run).
    const learnerFile = join(path, LEARNER_LOCK_FILE)
    const learner = await readText(learnerFile)
    if (learner !== undefined) refuseLive(path, learnerFile, learner)
  }

  const me: RunLockHolder = {
    pid: process.pid,
    hostname: hostname(),
    started: (options.clock ?? systemClock).now(),
    ...(procStat(process.pid) ? { procStart: procStat(process.pid)!.start } : {}),
  }
  const text = `${JSON.stringify(me)}\n`
  const tmp = join(path, `.run.lock.${process.pid}.${randomBytes(4).toString('hex')}`)
  // Inside the try: a write that fails half-way (a full disk) made the file, which goes too.
  try {
    await writeFile(tmp, text, { flag: 'wx' })
    // A few rounds: the lock can vanish (released) or change (taken over) between two looks.
    for (let round = 0; round < 8; round++) {
      try {
        await link(tmp, file)
        return heldLock(file, me, text)
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw err
      }
      const current = await readText(file)
      if (current === undefined) continue // released meanwhile: try again
      const stale = refuseLive(path, file, current)
      if (await takeOver(path, file, current, tmp)) {
        options.log?.(
          `${file}: took over the stale lock of pid ${stale.pid} (started ${new Date(stale.started).toISOString()}), which no longer runs`,
        )
        return heldLock(file, me, text, stale)
      }
    }
    throw new RunLockContendedError(file)
  } finally {
    await unlink(tmp).catch(() => {})
  }
}

/**
 * Replaces the stale lock whose text is `staleText` by ours (the file `tmp`), under the takeover
 * lock. False when the lock changed meanwhile or another process took it first (the caller looks
 * again).
 * @throws RunLockedError when a live process is taking the lock over right now.
 */
async function takeOver(path: string, file: string, staleText: string, tmp: string): Promise<boolean> {
  const mutex = `${file}.takeover`
  try {
    await link(tmp, mutex)
  } catch (err) {
    if (errno(err) !== 'EEXIST') throw err
    const text = await readText(mutex)
    if (text === undefined) return false
    const holder = parseHolder(text)
    // A taker that died in the middle leaves its takeover lock: remove it and look again.
    if (holder && lockHolderState(holder) === 'dead') await unlink(mutex).catch(() => {})
    else throw new RunLockedError(path, mutex, holder)
    return false
  }
  try {
    if ((await readText(file)) !== staleText) return false
    await unlink(file)
    try {
      await link(tmp, file)
      return true
    } catch (err) {
      if (errno(err) === 'EEXIST') return false // a plain lock got in between: it is the holder now
      throw err
    }
  } finally {
    await unlink(mutex).catch(() => {})
  }
}

/** The RunLock of a lock file this process made; it is also removed when the process exits. */
function heldLock(file: string, holder: RunLockHolder, text: string, tookOver?: RunLockHolder): RunLock {
  let released = false
  const removeSync = () => {
    try {
      if (readFileSync(file, 'utf8') === text) unlinkSync(file)
    } catch {}
  }
  process.once('exit', removeSync)
  return {
    file,
    holder,
    ...(tookOver ? { tookOver } : {}),
    release: async () => {
      if (released) return
      released = true
      process.off('exit', removeSync)
      if ((await readText(file)) === text) await unlink(file).catch(() => {})
    },
  }
}
