import { execFileSync } from 'node:child_process'

/**
 * Child processes that end with their parent, however the parent ends (`kill -9` included).
 *
 * Mechanism (Linux): the child is started as `setpriv --pdeathsig <SIG> -- <command> <args...>`.
 * `setpriv` (util-linux, present on every Debian and Ubuntu system) asks the kernel
 * (`prctl(PR_SET_PDEATHSIG)`) to send `<SIG>` to it when its parent dies, then `exec`s the command,
 * so the child keeps the pid, the stdio and the IPC channel it was given, and the signal comes even
 * while the child is busy in native code (a runaway SQLite query) or is a binary that cannot watch
 * its parent (nats-server). The kernel sends it when the *thread* that forked the child ends; Node
 * spawns from its main thread, which lives as long as the process.
 *
 * Elsewhere (no `setpriv`: macOS, minimal images), the command runs as given and a child may
 * outlive a parent that is killed with SIGKILL; a parent that exits normally still stops its
 * children itself.
 *
 * Such children are also started in a process group of their own (`OWN_PROCESS_GROUP`, spawn's
 * `detached`: a new session): the terminal's Ctrl-C (SIGINT to the foreground process group)
 * reaches the parent alone, which stops its children in its order (the roles first, then the
 * NATS server they need to stop cleanly). The parent-death signal does not depend on the group.
 */

/**
 * The `spawn` option that puts a child in a process group (and session) of its own, so that the
 * terminal's signals (Ctrl-C, Ctrl-\\) reach only its parent. Used with `dieWithParent` and without
 * `child.unref()`: the parent still waits for the child and the child still dies with the parent.
 */
export const OWN_PROCESS_GROUP = { detached: true } as const

/** A command line: the program and its arguments. */
export interface CommandLine {
  command: string
  args: string[]
}

let setprivPath: string | null | undefined

/** The `setpriv` binary that supports `--pdeathsig`, or undefined (looked up once). */
export function findSetpriv(): string | undefined {
  if (setprivPath === undefined) {
    setprivPath = null
    if (process.platform === 'linux')
      for (const candidate of ['setpriv', '/usr/bin/setpriv', '/bin/setpriv']) {
        try {
          execFileSync(candidate, ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' })
          setprivPath = candidate
          break
        } catch {}
      }
  }
  return setprivPath ?? undefined
}

/**
 * The command line that starts `command args` so that the kernel sends it `signal` when this
 * process dies (see the module comment); the command line unchanged where `setpriv` is missing.
 * @param signal `SIGTERM` for a child that stops cleanly on it (bounded by its own shutdown
 *   deadline); `SIGKILL` for one that has nothing to save.
 */
export function dieWithParent(command: string, args: readonly string[], signal: NodeJS.Signals): CommandLine {
  const setpriv = findSetpriv()
  if (!setpriv) return { command, args: [...args] }
  return { command: setpriv, args: ['--pdeathsig', signal.replace(/^SIG/, ''), '--', command, ...args] }
}
