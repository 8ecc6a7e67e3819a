import { spawn } from 'node:child_process'
import { accessSync, chmodSync, constants, lstatSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RunCodeRequest } from '../protocols/index.ts'
import { BackendKind, type BackendStats, type SandboxBackend } from './backend.ts'
import { SlotCgroup } from './cgroup.ts'
import type { SandboxLimits } from './limits.ts'
import {
  makeJob,
  memoryOf,
  parseRunnerOutput,
  RUNNER_ARGV,
  type RunnerJob,
  type RunnerResult,
  WORKDIR,
} from './runner-job.ts'
import { SlotQueue } from './slot-queue.ts'

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
}

interface LocalSlot {
  index: number
  /** The uid the user's code runs as; -1 when this process is not root and cannot switch. */
  uid: number
  cgroup: SlotCgroup | undefined
}

/** Extra seconds past a job's own limits before the server kills the whole sandbox. */
const HOST_GRACE_S = 10

/**
 * Runs jobs on this machine. With bubblewrap: a fresh mount, PID, network, IPC and UTS namespace
 * per job (read-only /usr, tmpfs /work and /tmp, no network, no host /etc or /home), the runner as
 * root with only CAP_SETUID/SETGID/KILL, the user's code as a per-slot uid; memory, pids and CPU in
 * a per-slot cgroup where one can be made (else RLIMIT_AS). Without bubblewrap: the same runner
 * directly on the host with resource limits only, and a loud warning that isolation is weaker.
 */
export class LocalBackend implements SandboxBackend {
  readonly kind = BackendKind.Local
  isolation = 'rlimits'
  private readonly limits: SandboxLimits
  private readonly useBwrap: boolean
  private readonly bwrapPath: string
  private readonly firstUid: number
  private readonly warn: (message: string) => void
  private queue: SlotQueue<LocalSlot> | undefined
  private slots: LocalSlot[] = []
  private done = 0
  private readonly live = new Set<ReturnType<typeof spawn>>()
  private closed = false

  constructor(o: LocalBackendOptions) {
    this.limits = o.limits
    this.useBwrap = o.bwrap ?? true
    this.bwrapPath = o.bwrapPath ?? '/usr/bin/bwrap'
    this.firstUid = o.firstUid ?? 61000
    this.warn = o.warn ?? ((m) => process.stderr.write(`${m}\n`))
  }

  async start(): Promise<void> {
    const root = process.getuid?.() === 0
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
    for (let i = 0; i < this.limits.concurrency; i++) {
      const cgroup = root
        ? SlotCgroup.tryCreate(`local-${process.pid}-${i}`, {
            memoryBytes: this.limits.memoryMB * 2 ** 20,
            pids: this.limits.pids,
            cpus: this.limits.cpus,
          })
        : undefined
      this.slots.push({ index: i, uid: root ? this.firstUid + i : -1, cgroup })
    }
    this.queue = new SlotQueue(this.slots, this.limits.maxQueue)
    const weak: string[] = []
    if (!bwrap) weak.push('bubblewrap is not installed: no filesystem, network or PID isolation')
    if (!root) weak.push('not running as root: the code runs as the server user')
    if (!this.slots[0]?.cgroup) weak.push('no cgroup: memory is limited by RLIMIT_AS, pids by RLIMIT_NPROC')
    if (weak.length > 0)
      this.warn(
        `\n*** WARNING: local sandbox isolation is WEAKER than docker ***\n${weak.map((w) => `*** - ${w}`).join('\n')}\n*** use --backend docker for untrusted code ***\n`,
      )
  }

  stats(): BackendStats {
    return {
      running: this.queue?.running ?? 0,
      queued: this.queue?.queued ?? 0,
      done: this.done,
      recycled: 0,
    }
  }

  async execute(request: RunCodeRequest): Promise<RunnerResult> {
    if (!this.queue || this.closed) return { error: 'local backend is not started' }
    const memoryBytes = memoryOf(request, this.limits) * 2 ** 20
    // Validate before taking a slot: a bad request must not wait in the queue.
    makeJob(request, this.limits, { uid: 0, gid: 0, cleanup: [] })
    const slot = await this.queue.acquire()
    try {
      return await this.runIn(slot, request, memoryBytes)
    } finally {
      this.done++
      this.queue.release(slot)
    }
  }

  private async runIn(slot: LocalSlot, request: RunCodeRequest, memoryBytes: number): Promise<RunnerResult> {
    let hostDir: string | undefined
    try {
      if (slot.cgroup) slot.cgroup.setMemory(memoryBytes)
      const common = { uid: slot.uid, gid: slot.uid, rlimitAsBytes: slot.cgroup ? undefined : memoryBytes }
      let job: RunnerJob
      let argv: string[]
      if (this.isolation === 'bwrap') {
        job = makeJob(request, this.limits, { ...common, cleanup: [], killMode: 'all' })
        argv = [this.bwrapPath, ...this.bwrapArgs(slot), '--', ...RUNNER_ARGV]
      } else {
        hostDir = mkdtempSync(join(tmpdir(), 'triad-sandbox-'))
        chmodSync(hostDir, 0o1777)
        job = makeJob(request, this.limits, {
          ...common,
          cleanup: [],
          workdir: hostDir,
          killMode: slot.uid >= 0 ? 'uid' : 'group',
        })
        argv = [...RUNNER_ARGV]
      }
      if (slot.cgroup) {
        const join = slot.cgroup.procsFiles.map((f) => `echo $$ > '${f}'`).join(' && ')
        argv = ['/bin/sh', '-c', `${join} && exec "$@"`, 'sh', ...argv]
      }
      const deadlineMs = (job.compile_timeout + job.run_timeout + HOST_GRACE_S) * 1000
      return await this.spawnRunner(argv, job, deadlineMs)
    } catch (err) {
      return { error: `local backend: ${(err as Error).message}` }
    } finally {
      if (hostDir) rmSync(hostDir, { recursive: true, force: true })
    }
  }

  private bwrapArgs(slot: LocalSlot): string[] {
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
    const size = String(this.limits.workdirBytes)
    args.push(
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--perms',
      '1777',
      '--size',
      size,
      '--tmpfs',
      WORKDIR,
      '--perms',
      '1777',
      '--size',
      size,
      '--tmpfs',
      '/tmp',
      '--chdir',
      WORKDIR,
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
      '--hostname',
      'sandbox',
    )
    if (slot.uid >= 0)
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

  private spawnRunner(argv: string[], job: RunnerJob, deadlineMs: number): Promise<RunnerResult> {
    const maxOut = 4 * this.limits.outputBytes + 2 * this.limits.fetchBytes + (1 << 20)
    return new Promise((resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {},
        detached: true,
      })
      this.live.add(child)
      const out: Buffer[] = []
      const err: Buffer[] = []
      let outBytes = 0
      let failure: string | undefined
      const kill = (why: string) => {
        failure ??= why
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL')
        } catch {
          child.kill('SIGKILL')
        }
      }
      const timer = setTimeout(() => kill(`the sandbox ran past ${deadlineMs} ms and was killed`), deadlineMs)
      child.stdout.on('data', (b: Buffer) => {
        outBytes += b.length
        if (outBytes > maxOut) kill(`the runner wrote more than ${maxOut} bytes`)
        else out.push(b)
      })
      child.stderr.on('data', (b: Buffer) => {
        if (err.length < 64) err.push(b)
      })
      child.stdin.on('error', () => {})
      child.on('error', (e) => kill(`cannot start the sandbox: ${e.message}`))
      child.on('close', () => {
        clearTimeout(timer)
        this.live.delete(child)
        if (failure) resolve({ error: failure })
        else
          resolve(parseRunnerOutput(Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')))
      })
      child.stdin.end(JSON.stringify(job))
    })
  }

  async close(): Promise<void> {
    this.closed = true
    for (const c of this.live) {
      try {
        if (c.pid) process.kill(-c.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    for (const s of this.slots) s.cgroup?.remove()
  }
}
