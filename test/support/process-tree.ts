import { readdirSync, readFileSync } from 'node:fs'

/**
 * Processes as Linux shows them in /proc, for tests that check that no child outlives its parent.
 * A process counts as gone when its /proc entry is missing, when it is a zombie (dead, waiting to
 * be reaped by whoever inherited it), or when its pid now belongs to a process started later.
 */

/** One process: its parent, process group, state letter, start time (clock ticks since boot) and command. */
export interface ProcStat {
  pid: number
  ppid: number
  /** Its process group. */
  pgrp: number
  state: string
  startTime: number
  comm: string
  /** User-mode CPU time, clock ticks. */
  utime: number
}

/** /proc/<pid>/stat of a live or zombie process, or undefined when there is none. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
  const close = text.lastIndexOf(')')
  const fields = text.slice(close + 2).split(' ')
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    utime: Number(fields[11]),
    startTime: Number(fields[19]),
  }
}

/** Every live descendant of `root` (children, their children, ...), not `root` itself. */
export function descendants(root: number): ProcStat[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => procStat(Number(d)))
    .filter((p): p is ProcStat => p !== undefined && p.state !== 'Z')
  const out: ProcStat[] = []
  const frontier = [root]
  while (frontier.length > 0) {
    const parent = frontier.pop()!
    for (const p of all)
      if (p.ppid === parent) {
        out.push(p)
        frontier.push(p.pid)
      }
  }
  return out
}

/** True when the process `p` (as seen before) no longer runs. */
export function isGone(p: ProcStat): boolean {
  const now = procStat(p.pid)
  return now === undefined || now.state === 'Z' || now.startTime !== p.startTime
}

/**
 * Resolves once `condition()` holds, checking every 50 ms; rejects with `what` at the deadline.
 * (There is no event for the end of a process that is not our child: /proc is the event source.)
 */
export function waitUntil(condition: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs
    const check = () => {
      if (condition()) return resolve()
      if (Date.now() > deadline) return reject(new Error(`not within ${timeoutMs} ms: ${what()}`))
      setTimeout(check, 50)
    }
    check()
  })
}

/** SIGKILLs every process of `ps` that still runs (cleanup after a failed test). */
export function killSurvivors(ps: readonly ProcStat[]): void {
  for (const p of ps)
    if (!isGone(p))
      try {
        process.kill(p.pid, 'SIGKILL')
      } catch {}
}
