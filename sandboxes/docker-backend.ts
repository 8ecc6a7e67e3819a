import { hostname } from 'node:os'
import { PassThrough } from 'node:stream'
import Docker from 'dockerode'
import type { RunCodeRequest } from '../protocols/index.ts'
import { BackendKind, type BackendStats, type SandboxBackend } from './backend.ts'
import { BackendError, SandboxImageError } from './errors.ts'
import { BINDS_LABEL, DEFAULT_IMAGE, LAYOUT_LABEL, LAYOUT_VERSION, SANDBOX_UID } from './image.ts'
import type { SandboxLimits } from './limits.ts'
import {
  makeJob,
  memoryOf,
  parseRunnerOutput,
  RUNNER_ARGV,
  type RunnerResult,
  WORKDIR,
} from './runner-job.ts'
import { SlotQueue } from './slot-queue.ts'

/** Options of the docker backend. */
export interface DockerBackendOptions {
  limits: SandboxLimits
  /** Image built by `triad sandbox image build` (default `triad-sandbox:latest`). */
  image?: string
  /** Docker client (default: the local daemon's socket). */
  docker?: Docker
  /** Where warnings go (default stderr). */
  warn?: (message: string) => void
}

/** Label on every pool container: `<hostname>:<pid>` of the server that owns it. */
const OWNER_LABEL = 'triad.sandbox.owner'
/** Extra seconds past a job's own limits before the server kills the container. */
const HOST_GRACE_S = 10

/** One warm container. `memoryMB` is its current cgroup limit; `runs` the jobs it served. */
interface PoolContainer {
  container: Docker.Container
  id: string
  memoryMB: number
  runs: number
}

/**
 * Runs jobs in a pool of warm docker containers, one `docker exec` of the runner per job.
 * Each container: no network (`NetworkMode: none`), read-only root, tmpfs /work and /tmp, the
 * host's /usr bind-mounted read-only, memory (no swap), pids and CPU limits, all capabilities
 * dropped but SETUID/SETGID/KILL (for the root runner and the idle keeper; the code runs as uid
 * 10001, which can neither signal nor trace them),
 * `no-new-privileges`. A container is replaced after `recycleAfter` jobs or after any breach (time
 * limit, output limit, death by a signal, leftover processes or files, runner failure); the
 * replacement is made in the background, so the answer never waits for it.
 */
export class DockerBackend implements SandboxBackend {
  readonly kind = BackendKind.Docker
  readonly isolation = 'docker'
  private readonly limits: SandboxLimits
  private readonly image: string
  private readonly docker: Docker
  private readonly warn: (message: string) => void
  private readonly owner = `${hostname()}:${process.pid}`
  private binds: string[] = []
  private queue: SlotQueue<PoolContainer> | undefined
  private readonly all = new Set<PoolContainer>()
  private done = 0
  private recycled = 0
  private closed = false

  constructor(o: DockerBackendOptions) {
    this.limits = o.limits
    this.image = o.image ?? DEFAULT_IMAGE
    this.docker = o.docker ?? new Docker()
    this.warn = o.warn ?? ((m) => process.stderr.write(`${m}\n`))
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
    const slots = await Promise.all(Array.from({ length: this.limits.concurrency }, () => this.create()))
    this.queue = new SlotQueue(slots, this.limits.maxQueue)
  }

  stats(): BackendStats {
    return {
      running: this.queue?.running ?? 0,
      queued: this.queue?.queued ?? 0,
      done: this.done,
      recycled: this.recycled,
    }
  }

  async execute(request: RunCodeRequest): Promise<RunnerResult> {
    if (!this.queue || this.closed) return { error: 'docker backend is not started' }
    const job = makeJob(request, this.limits, {
      uid: SANDBOX_UID,
      gid: SANDBOX_UID,
      cleanup: [WORKDIR, '/tmp', '/dev/shm'],
      killMode: 'all',
    })
    const memoryMB = memoryOf(request, this.limits)
    const slot = await this.queue.acquire()
    let result: RunnerResult
    try {
      if (slot.memoryMB !== memoryMB) {
        const bytes = memoryMB * 2 ** 20
        await slot.container.update({ Memory: bytes, MemorySwap: bytes })
        slot.memoryMB = memoryMB
      }
      const deadlineMs = (job.compile_timeout + job.run_timeout + HOST_GRACE_S) * 1000
      result = await this.exec(slot, JSON.stringify(job), deadlineMs)
    } catch (err) {
      result = { error: `docker backend: ${(err as Error).message}` }
    }
    slot.runs++
    this.done++
    const breach = 'error' in result || result.breaches.length > 0
    if (breach || slot.runs >= this.limits.recycleAfter) void this.recycle(slot)
    else this.queue.release(slot)
    return result
  }

  /** Runs the runner in `slot` with `input` on stdin; kills the container past `deadlineMs`. */
  private async exec(slot: PoolContainer, input: string, deadlineMs: number): Promise<RunnerResult> {
    const exec = await slot.container.exec({
      Cmd: [...RUNNER_ARGV],
      User: '0:0',
      WorkingDir: WORKDIR,
      Env: [],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    })
    const stream = await exec.start({ hijack: true, stdin: true })
    const maxOut = 4 * this.limits.outputBytes + 2 * this.limits.fetchBytes + (1 << 20)
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
      stream.write(input)
      ;(stream as unknown as { end(): void }).end()
    })
  }

  /** Creates and starts one warm container. */
  private async create(): Promise<PoolContainer> {
    const tmpfs = `rw,exec,nosuid,nodev,size=${this.limits.workdirBytes},mode=1777`
    const memory = this.limits.memoryMB * 2 ** 20
    const container = await this.docker.createContainer({
      Image: this.image,
      Cmd: ['/usr/bin/sleep', 'infinity'],
      // The idle keeper and the runner are uid 0 with only SETUID/SETGID/KILL (docker gives a
      // non-root container's execs no capabilities at all); the code itself runs as SANDBOX_UID.
      User: '0:0',
      WorkingDir: WORKDIR,
      Env: [],
      NetworkDisabled: true,
      Labels: { [OWNER_LABEL]: this.owner },
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        Binds: this.binds,
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
    await container.start()
    const slot: PoolContainer = { container, id: container.id, memoryMB: this.limits.memoryMB, runs: 0 }
    this.all.add(slot)
    return slot
  }

  /** Replaces `slot` by a fresh container in the background; retries while docker fails. */
  private async recycle(slot: PoolContainer): Promise<void> {
    this.recycled++
    this.all.delete(slot)
    void slot.container.remove({ force: true }).catch(() => {})
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const fresh = await this.create()
        if (this.closed) {
          await fresh.container.remove({ force: true }).catch(() => {})
          return
        }
        this.queue!.release(fresh)
        return
      } catch (err) {
        this.warn(`triad sandbox: cannot start a replacement container: ${(err as Error).message}`)
        await new Promise((r) => setTimeout(r, Math.min(500 * 2 ** attempt, 10_000)))
      }
    }
  }

  /** Removes pool containers whose owner server is gone (same host, pid not alive). */
  private async removeOrphans(): Promise<void> {
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
    this.closed = true
    await Promise.all([...this.all].map((s) => s.container.remove({ force: true }).catch(() => {})))
    this.all.clear()
  }
}
