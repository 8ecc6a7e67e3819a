import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'

/**
 * Test hosts in Linux network namespaces (iproute2's `ip netns`, root only): each host is a
 * namespace with its own loopback and one veth link to a switch (a bridge in a namespace of its
 * own), so processes started on it see the other hosts at their private addresses and nothing
 * else. The test process itself reaches them through one more veth on the switch (the address
 * `.1` of the subnet), and no other address is ever a target. `cut` takes a host's link down and
 * `restore` brings it back; `killAll` SIGKILLs every process in a host's namespace. `teardown`
 * (also run when the test process exits) kills every process of every host and deletes the
 * namespaces and the test's veth, whatever state the test left them in.
 */

/** One test host: a network namespace with an address on the test's switch. */
export interface NetnsHost {
  /** The host's name in the test (`a`, `s1`). */
  name: string
  /** The namespace's name (`triad-<pid>-<name>`). */
  netns: string
  /** The host's address on the switch (`10.x.y.z`). */
  address: string
  /**
   * Starts `command args` in the host's namespace (through `ip netns exec`, which execs it: the
   * child's pid is the command's).
   */
  spawn(command: string, args: string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): HostProcess
  /** Runs `command args` in the host's namespace to its end; stdout, stderr and the exit code. */
  exec(
    command: string,
    args: string[],
    options?: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number },
  ): Promise<{ code: number | null; stdout: string; stderr: string }>
  /** Takes the host's link to the switch down (both ends): it can reach no other host, nor they it. */
  cut(): void
  /** Brings the host's link up again. */
  restore(): void
  /**
   * SIGKILLs every process in the host's namespace (`ip netns pids`) and resolves when none is left.
   * @throws Error when one is still there after `timeoutMs` (default 10,000).
   */
  killAll(timeoutMs?: number): Promise<void>
}

/** A process started on a test host. */
export interface HostProcess {
  child: ChildProcess
  /** Lines printed on stdout so far. */
  stdout: string[]
  /** Everything printed on stderr so far. */
  stderr(): string
  /** Resolves with the first stdout line that `pattern` matches, or rejects at the deadline or exit. */
  waitForText(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Settings of every host of a `createNetnsHosts` set. */
export interface NetnsHostsOptions {
  /**
   * The hosts' `net.ipv4.tcp_retries2` (Linux's default is 15: a connection whose peer vanished
   * with data unacknowledged errors out after about 15 minutes; 4 makes it about 6 s at this
   * switch's round trip). Absent: the default.
   * @throws Error from `createNetnsHosts` when not an integer from 1 to 15.
   */
  tcpRetries2?: number
}

/** A set of test hosts on one switch. */
export interface NetnsHosts {
  hosts: Record<string, NetnsHost>
  /** The subnet, `10.x.y.0/24`. */
  subnet: string
  /** Kills every host's processes and deletes every namespace and link; safe to call twice. */
  teardown(): Promise<void>
}

const PREFIX = 'triad-'

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/** The pids in namespace `netns` (empty when it has none or does not exist). */
function netnsPids(netns: string): number[] {
  try {
    return ip('netns', 'pids', netns)
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((p) => p !== process.pid)
  } catch {
    return []
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Whether `pid` is gone or a zombie (dead, not reaped yet). */
function gone(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return true
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return true
  }
}

/** SIGKILLs every process of `netns`; resolves when each is gone or a zombie. */
async function killNetns(netns: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const pids = netnsPids(netns).filter((p) => !gone(p))
    if (pids.length === 0) return
    for (const pid of pids)
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    if (Date.now() > deadline)
      throw new Error(`processes ${pids.join(', ')} of ${netns} still run ${timeoutMs} ms after SIGKILL`)
    // The kernel ends a SIGKILLed process within a scheduling slice; look again shortly.
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Deletes namespaces named `triad-<pid>-*` whose creating process is gone (a test killed mid-run). */
function removeStale(): void {
  let list = ''
  try {
    list = ip('netns', 'list')
  } catch {
    return
  }
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0] ?? ''
    const m = /^triad-(\d+)-/.exec(name)
    if (!m || alive(Number(m[1]))) continue
    for (const pid of netnsPids(name))
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    try {
      ip('netns', 'del', name)
    } catch {}
  }
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const m = /^\d+: (tn(\d+)c)[@:]/.exec(line)
    if (m && !alive(Number(m[2])))
      try {
        ip('link', 'del', m[1]!)
      } catch {}
  }
}

/** A /24 under 10.0.0.0/8 that no route of the test's own namespace covers, derived from the pid. */
function freeSubnet(): string {
  const routes = ip('-4', 'route', 'show', 'table', 'all')
  for (let i = 0; i < 250; i++) {
    const n = (process.pid + i * 7919) % 62500
    const base = `10.${200 + (Math.floor(n / 250) % 50)}.${n % 250}`
    if (!routes.includes(`${base}.`)) return base
  }
  throw new Error('no free 10.x.y.0/24 for the test hosts')
}

function startProcess(
  netns: string,
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string },
): HostProcess {
  const child = spawn('ip', ['netns', 'exec', netns, command, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
  })
  const stdout: string[] = []
  let err = ''
  const waiters = new Set<(line: string) => void>()
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
  })
  createInterface({ input: child.stdout! }).on('line', (line) => {
    stdout.push(line)
    for (const w of waiters) w(line)
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  const what = `${command} ${args.join(' ')} on ${netns}`
  return {
    child,
    stdout,
    stderr: () => err,
    exited,
    waitForText: (pattern, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = (line: string) => {
          const m = pattern.exec(line)
          if (m) {
            done()
            resolve(m)
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(
            new Error(`no line matching ${pattern} from ${what} within ${timeoutMs} ms; stderr:\n${err}`),
          )
        }, timeoutMs)
        const onExit = () => {
          done()
          reject(new Error(`${what} exited before a line matching ${pattern}; stderr:\n${err}`))
        }
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
          child.off('exit', onExit)
        }
        waiters.add(check)
        child.once('exit', onExit)
        for (const line of stdout) check(line)
      }),
  }
}

/**
 * Creates one namespace per name in `names` (at most 200), each linked to one switch, with
 * addresses `10.x.y.11`, `.12`, ... in name order, loopback up, and the test process at `.1`.
 * Namespaces left by a test process that is gone are deleted first.
 * @throws Error when not run as root, when `ip netns` is missing, or on a bad name (letters and
 *   digits, at most 8).
 */
export function createNetnsHosts(names: readonly string[], options: NetnsHostsOptions = {}): NetnsHosts {
  if (process.getuid?.() !== 0) throw new Error('network namespaces need root')
  if (names.length === 0 || names.length > 200) throw new Error(`1 to 200 hosts, not ${names.length}`)
  for (const n of names)
    if (!/^[a-z0-9]{1,8}$/.test(n)) throw new Error(`host name '${n}': 1 to 8 lowercase letters or digits`)
  if (new Set(names).size !== names.length) throw new Error(`host names repeat: ${names.join(', ')}`)
  const retries = options.tcpRetries2
  if (retries !== undefined && !(Number.isInteger(retries) && retries >= 1 && retries <= 15))
    throw new Error(`tcpRetries2 is 1 to 15, not ${retries}`)
  removeStale()
  const tag = `${PREFIX}${process.pid}`
  const base = freeSubnet()
  const sw = `${tag}-sw`
  const test = `tn${process.pid}c`
  const made: string[] = []
  let torn = false
  const hosts: Record<string, NetnsHost> = {}

  const teardownSync = () => {
    if (torn) return
    torn = true
    for (const ns of made) {
      for (const pid of netnsPids(ns))
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
    }
    for (const ns of made.reverse())
      try {
        ip('netns', 'del', ns)
      } catch {}
    try {
      ip('link', 'del', test)
    } catch {}
  }
  process.once('exit', teardownSync)

  try {
    ip('netns', 'add', sw)
    made.push(sw)
    ip('-n', sw, 'link', 'add', 'br0', 'type', 'bridge')
    ip('-n', sw, 'link', 'set', 'dev', 'br0', 'up')
    // The test process's own end on the switch.
    ip('link', 'add', test, 'type', 'veth', 'peer', 'name', 'test', 'netns', sw)
    ip('-n', sw, 'link', 'set', 'dev', 'test', 'master', 'br0', 'up')
    ip('addr', 'add', `${base}.1/24`, 'dev', test)
    ip('link', 'set', 'dev', test, 'up')
    names.forEach((name, i) => {
      const netns = `${tag}-${name}`
      const address = `${base}.${11 + i}`
      // The switch's port of this host.
      const port = `h-${name}`
      ip('netns', 'add', netns)
      made.push(netns)
      ip('-n', netns, 'link', 'set', 'dev', 'lo', 'up')
      // /proc/sys/net is the namespace's own for a process inside it.
      if (retries !== undefined)
        execFileSync(
          'ip',
          ['netns', 'exec', netns, 'sh', '-c', `echo ${retries} > /proc/sys/net/ipv4/tcp_retries2`],
          {
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        )
      ip('-n', netns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', port, 'netns', sw)
      ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0')
      ip('-n', netns, 'link', 'set', 'dev', 'eth0', 'up')
      ip('-n', sw, 'link', 'set', 'dev', port, 'master', 'br0', 'up')
      hosts[name] = {
        name,
        netns,
        address,
        spawn: (command, args, options = {}) => startProcess(netns, command, args, options),
        exec: async (command, args, options = {}) => {
          const p = startProcess(netns, command, args, options)
          const timer = setTimeout(() => p.child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
          const { code } = await p.exited
          clearTimeout(timer)
          return { code, stdout: p.stdout.join('\n'), stderr: p.stderr() }
        },
        cut: () => {
          ip('-n', sw, 'link', 'set', 'dev', port, 'down')
          ip('-n', netns, 'link', 'set', 'dev', 'eth0', 'down')
        },
        restore: () => {
          ip('-n', netns, 'link', 'set', 'dev', 'eth0', 'up')
          ip('-n', sw, 'link', 'set', 'dev', port, 'up')
        },
        killAll: (timeoutMs = 10_000) => killNetns(netns, timeoutMs),
      }
    })
  } catch (err) {
    teardownSync()
    process.off('exit', teardownSync)
    throw err
  }

  return {
    hosts,
    subnet: `${base}.0/24`,
    teardown: async () => {
      if (torn) return
      for (const ns of made) await killNetns(ns, 10_000).catch(() => undefined)
      teardownSync()
      process.off('exit', teardownSync)
    },
  }
}
