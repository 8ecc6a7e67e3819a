import { type ChildProcess, spawn } from 'node:child_process'
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RunCodeRequest } from '../protocols/index.ts'
import { InvariantError } from '../protocols/index.ts'
import { BackendKind, type BackendStats, type SandboxBackend } from './backend.ts'
import { SlotCgroup } from './cgroup.ts'
import { hostEtcPaths } from './host-etc.ts'
import type { SandboxLimits } from './limits.ts'
import { RunnerChannel } from './runner-channel.ts'
import {
  makeJob,
  memoryOf,
  type RunnerJob,
  type RunnerResult,
  runnerServeArgv,
  WORKDIR,
} from './runner-job.ts'
import { buildSeccompFilter } from './seccomp.ts'
import { WarmPool, type WarmSandbox } from './warm-pool.ts'

/** Options of the local backend. */
export interface LocalBackendOptions {
  limits: SandboxLimits
  /** Use bubblewrap when it is installed (default true). */
  bwrap?: boolean
  /** Path of bwrap (default /usr/bin/bwrap). */
  bwrapPath?: string
  /** First uid of the per-slot users when running as root (default 61000; slot i gets 61000+i). */
  firstUid?: number
  /** Where warnings go (default stderr). */
  warn?: (message: string) => void
  /** Serve python through each slot's fork server (default true); false spawns a new interpreter
   *  per request. */
  forkServer?: boolean
}

/** Where a slot's memory cgroup `memory.oom_control` is bound inside bubblewrap. */
const OOM_FILE = '/run/triad/memory.oom_control'

/** One slot: a uid, a cgroup, and the warm runner that serves it. */
interface LocalSandbox extends WarmSandbox {
  index: number
  /** The uid the user's code runs as; -1 when this process is not root and cannot switch. */
  uid: number
  cgroup: SlotCgroup | undefined
  child: ChildProcess
  channel: RunnerChannel
  /** Without bwrap: the host folder used as the work dir. */
  hostDir?: string
}

/** Extra seconds past a job's own limits before the server kills the whole sandbox. */
const HOST_GRACE_S = 10

/**
 * Runs jobs on this machine, in a pool of warm runners (`WarmPool`), one per slot. With bubblewrap:
 * each runner lives in its own mount, PID, network, IPC and UTS namespace (read-only /usr, tmpfs
 * /work and /tmp, no network, no host /etc or /home), as root with only CAP_SETUID/SETGID/KILL,
 * under a seccomp filter refusing what docker's default profile refuses (see seccomp-filter.py;
 * without python3-seccomp a loud warning says so), and runs the code as the slot's own uid; memory, pids and CPU are limited by a per-slot cgroup where
 * one can be made (else RLIMIT_AS). Without bubblewrap: the runner runs on the host with resource
 * limits only, and a loud warning says that isolation is weaker. After each job every process of
 * the job is killed, the work dir wiped and (with bubblewrap) the job's System V IPC objects and
 * /dev/mqueue entries removed; a slot whose job breached a limit gets a fresh runner.
 */
export class LocalBackend implements SandboxBackend {
  readonly kind = BackendKind.Local
  isolation = 'rlimits'
  private readonly limits: SandboxLimits
  private readonly useBwrap: boolean
  private readonly bwrapPath: string
  private readonly firstUid: number
  private readonly warn: (message: string) => void
  private readonly pool: WarmPool<LocalSandbox>
  private root = false
  private readonly freeSlots: number[] = []
  private readonly cgroups = new Map<number, SlotCgroup | undefined>()
  /** Whether python requests go through the slots' fork servers. */
  readonly forkServer: boolean
  /** With bubblewrap: the compiled seccomp filter (see seccomp-filter.py), in `stateDir`. */
  private seccompFile: string | undefined
  private stateDir: string | undefined

  constructor(o: LocalBackendOptions) {
    this.limits = o.limits
    this.useBwrap = o.bwrap ?? true
    this.bwrapPath = o.bwrapPath ?? '/usr/bin/bwrap'
    this.firstUid = o.firstUid ?? 61000
    this.forkServer = o.forkServer ?? true
    this.warn = o.warn ?? ((m) => process.stderr.write(`${m}\n`))
    this.pool = new WarmPool<LocalSandbox>({
      size: o.limits.concurrency,
      maxQueue: o.limits.maxQueue,
      recycleAfter: o.limits.recycleAfter,
      create: () => this.create(),
      destroy: (s) => this.destroy(s),
      warn: this.warn,
    })
  }

  async start(): Promise<void> {
    this.root = process.getuid?.() === 0
    let bwrap = false
    if (this.useBwrap) {
      try {
        accessSync(this.bwrapPath, constants.X_OK)
        bwrap = true
      } catch {
        bwrap = false
      }
    }
    this.isolation = bwrap ? 'bwrap' : 'rlimits'
    if (this.root) SlotCgroup.sweep()
    for (let i = 0; i < this.limits.concurrency; i++) {
      this.freeSlots.push(i)
      this.cgroups.set(
        i,
        this.root
          ? SlotCgroup.tryCreate(`local-${process.pid}-${i}`, {
              memoryBytes: this.limits.memoryMB * 2 ** 20,
              pids: this.limits.pids,
              cpus: this.limits.cpus,
            })
          : undefined,
      )
    }
    const weak: string[] = []
    if (!bwrap) weak.push('bubblewrap is not installed: no filesystem, network or PID isolation')
    else {
      const filter = buildSeccompFilter()
      if ('error' in filter) weak.push(`no seccomp filter: ${filter.error}`)
      else {
        this.stateDir = mkdtempSync(join(tmpdir(), 'triad-sandbox-seccomp-'))
        this.seccompFile = join(this.stateDir, 'filter.bpf')
        writeFileSync(this.seccompFile, filter.bpf)
      }
    }
    if (!this.root) weak.push('not running as root: the code runs as the server user')
    if (!this.cgroups.get(0)) weak.push('no cgroup: memory is limited by RLIMIT_AS, pids by RLIMIT_NPROC')
    if (weak.length > 0)
      this.warn(
        `\n*** WARNING: local sandbox isolation is WEAKER than docker ***\n${weak.map((w) => `*** - ${w}`).join('\n')}\n*** use --backend docker for untrusted code ***\n`,
      )
    await this.pool.start()
  }

  stats(): BackendStats {
    const p = this.pool
    return { running: p.running, queued: p.queued, done: p.done, recycled: p.recycled }
  }

  async execute(request: RunCodeRequest): Promise<RunnerResult> {
    const memoryBytes = memoryOf(request, this.limits) * 2 ** 20
    // Validate before taking a slot: a bad request must not wait in the line.
    makeJob(request, this.limits, { uid: 0, gid: 0, cleanup: [] })
    return this.pool.use(async (slot) => {
      slot.cgroup?.setMemory(memoryBytes)
      const job: RunnerJob = makeJob(request, this.limits, {
        uid: slot.uid,
        gid: slot.uid,
        rlimitAsBytes: slot.cgroup ? undefined : memoryBytes,
        workdir: slot.hostDir ?? WORKDIR,
        cleanup: slot.hostDir ? [slot.hostDir] : [WORKDIR, '/tmp'],
        killMode: this.isolation === 'bwrap' ? 'all' : slot.uid >= 0 ? 'uid' : 'group',
        fork: this.forkServer,
        ipcCleanup: this.isolation === 'bwrap',
        oomFile: slot.cgroup ? (this.isolation === 'bwrap' ? OOM_FILE : slot.cgroup.oomControlFile) : null,
      })
      const r = await slot.channel.run(job, (job.compile_timeout + job.run_timeout + HOST_GRACE_S) * 1000)
      slot.alive = slot.channel.alive
      return r
    })
  }

  /** Starts the warm runner of a free slot. @throws InvariantError when no slot is free (the pool's size is the slots'). */
  private async create(): Promise<LocalSandbox> {
    const index = this.freeSlots.shift()
    if (index === undefined) throw new InvariantError('no free local slot')
    const uid = this.root ? this.firstUid + index : -1
    const cgroup = this.cgroups.get(index)
    let hostDir: string | undefined
    let argv: string[]
    const serve = runnerServeArgv(this.forkServer, this.limits)
    if (this.isolation === 'bwrap') argv = [this.bwrapPath, ...this.bwrapArgs(uid, cgroup), '--', ...serve]
    else {
      hostDir = mkdtempSync(join(tmpdir(), 'triad-sandbox-'))
      chmodSync(hostDir, 0o1777)
      argv = serve
    }
    if (cgroup) {
      const joinGroup = cgroup.procsFiles.map((f) => `echo $$ > '${f}'`).join(' && ')
      argv = ['/bin/sh', '-c', `${joinGroup} && exec "$@"`, 'sh', ...argv]
    }
    // bwrap reads the seccomp program from fd 3 (`--seccomp 3`)
    const filterFd =
      this.isolation === 'bwrap' && this.seccompFile ? openSync(this.seccompFile, 'r') : undefined
    let child: ChildProcess
    try {
      child = spawn(argv[0]!, argv.slice(1), {
        stdio: filterFd === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', filterFd],
        env: {},
        detached: true,
        cwd: hostDir ?? '/',
      })
    } finally {
      if (filterFd !== undefined) closeSync(filterFd)
    }
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
    }
    const channel = new RunnerChannel({
      input: child.stdin!,
      output: child.stdout!,
      stderr: child.stderr!,
      kill,
      maxLineBytes: 4 * this.limits.outputBytes + 2 * this.limits.fetchBytes + (1 << 20),
    })
    child.on('error', () => kill())
    return { index, uid, cgroup, child, channel, hostDir, runs: 0, alive: true }
  }

  /** Kills a slot's runner (and with it its namespaces), then frees the slot. */
  private async destroy(s: LocalSandbox): Promise<void> {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      const exited = new Promise((r) => s.child.once('exit', r))
      try {
        if (s.child.pid) process.kill(-s.child.pid, 'SIGKILL')
      } catch {
        s.child.kill('SIGKILL')
      }
      await exited
    }
    if (s.hostDir) rmSync(s.hostDir, { recursive: true, force: true })
    this.freeSlots.push(s.index)
  }

  private bwrapArgs(uid: number, cgroup: SlotCgroup | undefined): string[] {
    const args = ['--ro-bind', '/usr', '/usr']
    for (const top of ['/bin', '/lib', '/lib64', '/sbin']) {
      try {
        const st = lstatSync(top)
        if (st.isSymbolicLink()) args.push('--symlink', `usr${top}`, top)
        else if (st.isDirectory()) args.push('--ro-bind', top, top)
      } catch {
        // absent on this host
      }
    }
    // bwrap makes a missing parent 0700: /etc must be readable by the job's uid
    args.push('--perms', '0755', '--dir', '/etc')
    for (const p of hostEtcPaths()) args.push('--ro-bind', p, p)
    const size = String(this.limits.workdirBytes)
    args.push(
      ...['--proc', '/proc', '--dev', '/dev', '--mqueue', '/dev/mqueue'],
      ...['--perms', '1777', '--size', size, '--tmpfs', WORKDIR],
      ...['--perms', '1777', '--size', size, '--tmpfs', '/tmp'],
      ...['--chdir', WORKDIR, '--hostname', 'sandbox'],
      ...['--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'],
      ...['--die-with-parent', '--new-session', '--clearenv'],
    )
    if (cgroup) args.push('--ro-bind', cgroup.oomControlFile, OOM_FILE)
    if (this.seccompFile) args.push('--seccomp', '3')
    if (uid >= 0)
      args.push(
        '--cap-drop',
        'ALL',
        '--cap-add',
        'CAP_SETUID',
        '--cap-add',
        'CAP_SETGID',
        '--cap-add',
        'CAP_KILL',
      )
    else args.push('--unshare-user')
    return args
  }

  async close(): Promise<void> {
    await this.pool.close()
    await Promise.all([...this.cgroups.values()].map((c) => c?.remove()))
    if (this.stateDir) rmSync(this.stateDir, { recursive: true, force: true })
  }
}
