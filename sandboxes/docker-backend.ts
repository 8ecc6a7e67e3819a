import { hostname } from 'node:os'
import { PassThrough } from 'node:stream'
import Docker from 'dockerode'
import type { RunCodeRequest } from '../protocols/index.ts'
import { BackendKind, type BackendStats, type SandboxBackend } from './backend.ts'
import { BackendError, SandboxImageError, SandboxLostError } from './errors.ts'
import {
  BINDS_LABEL,
  DEFAULT_IMAGE,
  LAYOUT_LABEL,
  LAYOUT_VERSION,
  SANDBOX_UID,
  SANDBOX_UID_COUNT,
} from './image.ts'
import type { SandboxLimits } from './limits.ts'
import { RunnerChannel } from './runner-channel.ts'
import {
  makeJob,
  memoryOf,
  parseRunnerOutput,
  RUNNER_ARGV,
  type RunnerJob,
  type RunnerResult,
  runnerServeArgv,
  WORKDIR,
} from './runner-job.ts'
import { RunnerLink } from './runner-link.ts'
import { WarmPool, type WarmSandbox } from './warm-pool.ts'

/** How a job reaches the runner in a warm container. Closed set. */
export const DockerMode = {
  /** The container's main process is a long-lived runner; jobs go over a unix socket between it and
   *  this process (`RunnerLink`), so a job costs no docker API call and does not pass through the
   *  docker daemon (the fast path). */
  Attach: 'attach',
  /** The container idles (`sleep infinity`); each job is one `docker exec` of the runner. */
  Exec: 'exec',
} as const
export type DockerMode = (typeof DockerMode)[keyof typeof DockerMode]

/** Options of the docker backend. */
export interface DockerBackendOptions {
  limits: SandboxLimits
  /** Image built by `triad sandbox image build` (default `triad-sandbox:latest`). */
  image?: string
  /** `attach` (default) or `exec`; see `DockerMode`. */
  mode?: DockerMode
  /** Attach mode: serve python through each container's fork server (default true); false spawns
   *  a new interpreter per request. Exec mode has no warm runner and always spawns. */
  forkServer?: boolean
  /** Docker client (default: the local daemon's socket). */
  docker?: Docker
  /** Where warnings go (default stderr). */
  warn?: (message: string) => void
}

/** Label on every pool container: `<hostname>:<pid>` of the server that owns it. */
const OWNER_LABEL = 'triad.sandbox.owner'
/** Label on every pool container: the uid its jobs run as (see `SANDBOX_UID`). */
export const UID_LABEL = 'triad.sandbox.uid'
/** Extra seconds past a job's own limits before the server kills the container. */
const HOST_GRACE_S = 10
/** Where a container sees the folder of its runner's socket (read-only). */
const LINK_MOUNT = '/run/triad'
/** How long a started container's runner has to connect, ms. */
const LINK_CONNECT_MS = 30_000

/** One warm container. `memoryMB` is its current cgroup limit; `channel` its runner (attach mode). */
interface PoolContainer extends WarmSandbox {
  container: Docker.Container
  /** The uid (and gid) its jobs run as, this container's alone on the host. */
  uid: number
  memoryMB: number
  channel?: RunnerChannel
  /** Attach mode: the host folder of its runner's socket. */
  link?: RunnerLink
}

/**
 * Runs jobs in a pool of warm docker containers (`WarmPool`). Each container: no network
 * (`NetworkMode: none`), read-only root, tmpfs /work and /tmp, the host's /usr bind-mounted
 * read-only, memory (no swap), pids and CPU limits, every capability dropped but SETUID/SETGID/KILL
 * (held by the root runner only; the code runs as the container's own uid, which can neither signal
 * nor trace it), `no-new-privileges`, docker's default seccomp profile, a private IPC namespace.
 * Each container's jobs run as a uid of its own (one of `SANDBOX_UID_COUNT` from `SANDBOX_UID`, not
 * used by any other sandbox container on the host, recorded in its `UID_LABEL`), so the kernel's
 * per-user limits (inotify instances and watches, POSIX message-queue bytes, RLIMIT_NPROC, pending
 * signals) count one job only. Processes and threads are limited by the container's pids cgroup
 * and by RLIMIT_NPROC. After each job the runner kills every
 * process of the job and wipes /work, /tmp, /dev/shm, the job's System V IPC objects and
 * /dev/mqueue, so nothing of a job outlives it; the job's processes have oom_score_adj 1000, so the
 * memory limit kills them (reported as the job's Failed run) rather than the runner. A container is replaced after `recycleAfter` jobs or after any breach
 * (time limit, output limit, death by a signal, leftover processes or files, runner failure).
 */
export class DockerBackend implements SandboxBackend {
  readonly kind = BackendKind.Docker
  readonly isolation = 'docker'
  readonly mode: DockerMode
  /** Whether python requests go through the containers' fork servers. */
  readonly forkServer: boolean
  private readonly limits: SandboxLimits
  private readonly image: string
  private readonly docker: Docker
  private readonly warn: (message: string) => void
  private readonly owner = `${hostname()}:${process.pid}`
  private binds: string[] = []
  /** Uids of this backend's containers, and of those being made. */
  private readonly uids = new Set<number>()
  private readonly pool: WarmPool<PoolContainer>

  constructor(o: DockerBackendOptions) {
    this.limits = o.limits
    this.image = o.image ?? DEFAULT_IMAGE
    this.mode = o.mode ?? DockerMode.Attach
    this.forkServer = this.mode === DockerMode.Attach && (o.forkServer ?? true)
    this.docker = o.docker ?? new Docker()
    this.warn = o.warn ?? ((m) => process.stderr.write(`${m}\n`))
    this.pool = new WarmPool<PoolContainer>({
      size: o.limits.concurrency,
      maxQueue: o.limits.maxQueue,
      recycleAfter: o.limits.recycleAfter,
      create: () => this.create(),
      destroy: (s) =>
        s.container
          .remove({ force: true })
          .then(() => {})
          .finally(() => {
            s.link?.close()
            this.uids.delete(s.uid)
          }),
      warn: this.warn,
    })
  }

  /**
   * Checks docker and the image, removes containers left by dead servers, starts the warm pool.
   * @throws BackendError when docker does not answer; SandboxImageError when the image is missing.
   */
  async start(): Promise<void> {
    try {
      await this.docker.ping()
    } catch (cause) {
      throw new BackendError('docker', `the docker daemon does not answer: ${(cause as Error).message}`, {
        cause,
      })
    }
    let labels: Record<string, string>
    try {
      labels = (await this.docker.getImage(this.image).inspect()).Config.Labels ?? {}
    } catch (cause) {
      throw new SandboxImageError(this.image, 'not found', { cause })
    }
    if (labels[LAYOUT_LABEL] !== LAYOUT_VERSION)
      throw new SandboxImageError(this.image, `layout ${labels[LAYOUT_LABEL]} is not ${LAYOUT_VERSION}`)
    this.binds = (labels[BINDS_LABEL] ?? '').split(',').filter((b) => b !== '')
    await this.removeOrphans()
    await this.pool.start()
  }

  stats(): BackendStats {
    const p = this.pool
    return { running: p.running, queued: p.queued, done: p.done, recycled: p.recycled }
  }

  async execute(request: RunCodeRequest): Promise<RunnerResult> {
    // validated before a container is taken; the uid is the container's
    const job = makeJob(request, this.limits, {
      uid: SANDBOX_UID,
      gid: SANDBOX_UID,
      cleanup: [WORKDIR, '/tmp', '/dev/shm'],
      killMode: 'all',
      fork: this.forkServer,
      ipcCleanup: true,
      oomFile: '/sys/fs/cgroup/memory/memory.oom_control',
    })
    const memoryMB = memoryOf(request, this.limits)
    const deadlineMs = (job.compile_timeout + job.run_timeout + HOST_GRACE_S) * 1000
    return this.pool.use(async (slot) => {
      job.uid = slot.uid
      job.gid = slot.uid
      if (slot.memoryMB !== memoryMB) {
        const bytes = memoryMB * 2 ** 20
        await slot.container.update({ Memory: bytes, MemorySwap: bytes })
        slot.memoryMB = memoryMB
      }
      if (slot.channel) {
        if (!slot.channel.alive)
          throw new SandboxLostError(`container ${slot.container.id.slice(0, 12)} exited`)
        const r = await slot.channel.run(job, deadlineMs)
        slot.alive = slot.channel.alive
        return r
      }
      return await this.exec(slot, job, deadlineMs)
    })
  }

  private get maxOut(): number {
    return 4 * this.limits.outputBytes + 2 * this.limits.fetchBytes + (1 << 20)
  }

  /** Exec mode: one `docker exec` of the runner; kills the container past `deadlineMs`. */
  private async exec(slot: PoolContainer, job: RunnerJob, deadlineMs: number): Promise<RunnerResult> {
    let exec: Docker.Exec
    try {
      exec = await slot.container.exec({
        Cmd: [...RUNNER_ARGV],
        User: '0:0',
        WorkingDir: WORKDIR,
        Env: [],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      })
    } catch (cause) {
      // nothing ran yet: the container is gone (409 not running, 404 removed)
      slot.alive = false
      throw new SandboxLostError((cause as Error).message, { cause })
    }
    const stream = await exec.start({ hijack: true, stdin: true })
    const maxOut = this.maxOut
    return await new Promise<RunnerResult>((resolve) => {
      const out: Buffer[] = []
      const err: Buffer[] = []
      let outBytes = 0
      let failure: string | undefined
      let settled = false
      const stdout = new PassThrough()
      const stderr = new PassThrough()
      const fail = (why: string) => {
        failure ??= why
        slot.alive = false
        void slot.container.kill().catch(() => {})
        stream.destroy()
      }
      const timer = setTimeout(
        () => fail(`the container ran past ${deadlineMs} ms and was killed`),
        deadlineMs,
      )
      stdout.on('data', (b: Buffer) => {
        outBytes += b.length
        if (outBytes > maxOut) fail(`the runner wrote more than ${maxOut} bytes`)
        else out.push(b)
      })
      stderr.on('data', (b: Buffer) => {
        if (err.length < 64) err.push(b)
      })
      const finish = () => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (failure) resolve({ error: failure })
        else
          resolve(parseRunnerOutput(Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')))
      }
      this.docker.modem.demuxStream(stream, stdout, stderr)
      stream.on('end', finish)
      stream.on('close', finish)
      stream.on('error', (e: Error) => {
        failure ??= `exec stream failed: ${e.message}`
        finish()
      })
      stream.write(JSON.stringify(job))
      ;(stream as unknown as { end(): void }).end() // cast: dockerode types the hijacked attach stream as readable only; it is a duplex socket
    })
  }

  /**
   * A sandbox uid that no sandbox container on this host uses (any server's, by their `UID_LABEL`)
   * and that this backend is not giving to a container it is making; taken at random among the free
   * ones, so two servers making containers at the same moment rarely pick the same one.
   * @throws BackendError when all `SANDBOX_UID_COUNT` are in use.
   */
  private async freeUid(): Promise<number> {
    const used = new Set(this.uids)
    const list = await this.docker.listContainers({ all: true, filters: { label: [UID_LABEL] } })
    for (const c of list) used.add(Number(c.Labels[UID_LABEL]))
    const free: number[] = []
    for (let uid = SANDBOX_UID; uid < SANDBOX_UID + SANDBOX_UID_COUNT; uid++)
      if (!used.has(uid)) free.push(uid)
    if (free.length === 0)
      throw new BackendError(
        'docker',
        `all ${SANDBOX_UID_COUNT} sandbox uids (${SANDBOX_UID} to ${SANDBOX_UID + SANDBOX_UID_COUNT - 1}) are in use by sandbox containers on this host`,
      )
    const uid = free[Math.floor(Math.random() * free.length)]!
    this.uids.add(uid)
    return uid
  }

  /** Creates and starts one warm container (attach mode: with its runner's channel). */
  private async create(): Promise<PoolContainer> {
    const uid = await this.freeUid()
    try {
      return await this.createWith(uid)
    } catch (err) {
      this.uids.delete(uid)
      throw err
    }
  }

  private async createWith(uid: number): Promise<PoolContainer> {
    const tmpfs = `rw,exec,nosuid,nodev,size=${this.limits.workdirBytes},mode=1777`
    const memory = this.limits.memoryMB * 2 ** 20
    const attach = this.mode === DockerMode.Attach
    const link = attach ? await RunnerLink.listen() : undefined
    let container: Docker.Container
    try {
      container = await this.docker.createContainer({
        Image: this.image,
        Cmd: attach
          ? runnerServeArgv(this.forkServer, this.limits, `${LINK_MOUNT}/${RunnerLink.SOCKET}`)
          : ['/usr/bin/sleep', 'infinity'],
        // The runner (and in exec mode the idle keeper) is uid 0 with only SETUID/SETGID/KILL: docker
        // gives the execs of a non-root container no capabilities at all. The code runs as `uid`.
        User: '0:0',
        WorkingDir: WORKDIR,
        Env: [],
        NetworkDisabled: true,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: attach,
        AttachStderr: attach,
        Tty: false,
        Labels: { [OWNER_LABEL]: this.owner, [UID_LABEL]: String(uid) },
        HostConfig: {
          NetworkMode: 'none',
          ReadonlyRootfs: true,
          Binds: link ? [...this.binds, `${link.dir}:${LINK_MOUNT}:ro`] : this.binds,
          Tmpfs: { [WORKDIR]: tmpfs, '/tmp': tmpfs },
          Memory: memory,
          MemorySwap: memory,
          PidsLimit: this.limits.pids,
          NanoCpus: Math.round(this.limits.cpus * 1e9),
          CapDrop: ['ALL'],
          CapAdd: ['SETUID', 'SETGID', 'KILL'],
          SecurityOpt: ['no-new-privileges'],
          IpcMode: 'private',
          Init: false,
          LogConfig: { Type: 'none', Config: {} },
          Ulimits: [{ Name: 'nofile', Soft: this.limits.openFiles, Hard: this.limits.openFiles }],
        },
      })
    } catch (err) {
      link?.close()
      throw err
    }
    const slot: PoolContainer = { container, uid, memoryMB: this.limits.memoryMB, runs: 0, alive: true, link }
    try {
      if (link) {
        // the runner's stderr (a crash's traceback) comes through docker; its jobs through the link
        const stream = await container.attach({ stream: true, stdout: true, stderr: true, hijack: true })
        const stderr = new PassThrough()
        const exited = new Promise<void>((resolve) => {
          stream.on('end', resolve)
          stream.on('close', resolve)
          stream.on('error', () => resolve())
        })
        this.docker.modem.demuxStream(stream, stderr, stderr)
        await container.start()
        const conn = await link.accept(exited, LINK_CONNECT_MS)
        slot.channel = new RunnerChannel({
          input: conn,
          output: conn,
          stderr,
          maxLineBytes: this.maxOut,
          kill: () => {
            conn.destroy()
            void container.kill().catch(() => {})
          },
        })
      } else await container.start()
    } catch (err) {
      link?.close()
      await container.remove({ force: true }).catch(() => {})
      throw err
    }
    return slot
  }

  /** Removes pool containers whose owner server is gone (same host, pid not alive), and their
   *  runner sockets' folders. */
  private async removeOrphans(): Promise<void> {
    RunnerLink.sweep()
    const host = hostname()
    const list = await this.docker.listContainers({ all: true, filters: { label: [OWNER_LABEL] } })
    for (const c of list) {
      const [h, pid] = (c.Labels[OWNER_LABEL] ?? '').split(':')
      if (h !== host) continue
      let alive = true
      try {
        process.kill(Number(pid), 0)
      } catch {
        alive = false
      }
      if (!alive)
        await this.docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {})
    }
  }

  async close(): Promise<void> {
    await this.pool.close()
  }
}
