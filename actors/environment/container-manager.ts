import { randomUUID } from 'node:crypto'
import type Docker from 'dockerode'
import type { Millis } from '../../protocols/index.ts'
import type { Clock } from '../runtime/index.ts'
import { execIn } from './container-exec.ts'
import { ContainerError, HealthCheckError } from './errors.ts'
import type { ContainerSpec } from './task.ts'

/**
 * The controller's containers (dockerode): one per session (`exclusive`, removed when the session
 * ends) or reused by up to `maxUses` sessions (`shared`). Every container has no network
 * (`NetworkMode: 'none'`), memory, pids and CPU limits, all capabilities dropped, and labels naming
 * the run and the controller instance that made it; containers of the run that this instance does
 * not hold are orphans (a killed controller's), removed at start and on a timer.
 */

/** Labels on every env container. */
export const ContainerLabels = {
  run: 'triad.env.run',
  owner: 'triad.env.owner',
  task: 'triad.env.task',
} as const

interface Held {
  id: string
  name: string
  task: string
  mode: ContainerSpec['mode']
  uses: number
  live: number
  maxUses: number
}

/** Settings of a container manager. */
export interface ContainerManagerOptions {
  docker: Docker
  run: string
  clock: Clock
  /** Period of the orphan sweep. Default 30,000 ms; 0 disables the timer. */
  sweepMs?: Millis
  /** Deadline for a container to pass its health check. Default 10,000 ms. */
  healthTimeoutMs?: Millis
}

/** Counters of a container manager. */
export interface ContainerCounts {
  containers_created: number
  containers_removed: number
  orphans_removed: number
  containers_live: number
}

/** Makes, shares and removes session containers. */
export class ContainerManager {
  /** This controller instance (a fresh id per process start). */
  readonly owner = randomUUID()
  private readonly held = new Map<string, Held>()
  private timer: unknown
  private seq = 0
  readonly counts: Omit<ContainerCounts, 'containers_live'> = {
    containers_created: 0,
    containers_removed: 0,
    orphans_removed: 0,
  }

  constructor(private readonly options: ContainerManagerOptions) {}

  /** Counters with the number of live containers. */
  stats(): ContainerCounts {
    return { ...this.counts, containers_live: this.held.size }
  }

  /** Removes orphans now, then every `sweepMs`. */
  async start(): Promise<void> {
    await this.removeOrphans()
    const every = this.options.sweepMs ?? 30_000
    if (every <= 0) return
    const loop = () => {
      this.timer = this.options.clock.setTimeout(() => {
        void this.removeOrphans()
          .catch(() => undefined)
          .then(loop)
      }, every)
    }
    loop()
  }

  /** Containers of this run not held by this instance, removed; returns how many. */
  async removeOrphans(): Promise<number> {
    const list = await this.options.docker.listContainers({
      all: true,
      filters: { label: [`${ContainerLabels.run}=${this.options.run}`] },
    })
    let n = 0
    for (const c of list) {
      if (c.Labels[ContainerLabels.owner] === this.owner && this.held.has(c.Id)) continue
      await this.remove(c.Id)
      n += 1
    }
    this.counts.orphans_removed += n
    return n
  }

  /**
   * A container for one session of `task`: a new one (exclusive), or a shared one with uses left.
   * @throws ContainerError when docker fails or the health check does not pass in time.
   */
  async acquire(task: string, spec: ContainerSpec): Promise<{ id: string; name: string }> {
    if (spec.mode === 'shared') {
      for (const h of this.held.values())
        if (h.task === task && h.mode === 'shared' && h.uses < h.maxUses) {
          h.uses += 1
          h.live += 1
          return { id: h.id, name: h.name }
        }
    }
    const name = `triad-env-${this.options.run}-${task}-${this.owner.slice(0, 8)}-${++this.seq}`
    let id: string | undefined
    try {
      const container = await this.options.docker.createContainer({
        name,
        Image: spec.image,
        Cmd: spec.cmd ?? ['sleep', '86400'],
        NetworkDisabled: true,
        Labels: {
          [ContainerLabels.run]: this.options.run,
          [ContainerLabels.owner]: this.owner,
          [ContainerLabels.task]: task,
        },
        HostConfig: {
          NetworkMode: 'none',
          Memory: spec.memoryBytes ?? 128 * 2 ** 20,
          MemorySwap: spec.memoryBytes ?? 128 * 2 ** 20,
          PidsLimit: spec.pids ?? 64,
          NanoCpus: Math.round((spec.cpus ?? 0.5) * 1e9),
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ReadonlyRootfs: true,
          Tmpfs: { '/tmp': 'rw,size=16m' },
        },
      })
      id = container.id
      this.held.set(id, { id, name, task, mode: spec.mode, uses: 1, live: 1, maxUses: spec.maxUses ?? 8 })
      this.counts.containers_created += 1
      await container.start()
      await this.waitHealthy(container, spec.health ?? ['true'])
      return { id, name }
    } catch (cause) {
      if (id) await this.remove(id)
      throw new ContainerError(task, spec.image, cause)
    }
  }

  /** A session using container `id` ended: an exclusive container (or a used-up shared one) goes. */
  async release(id: string): Promise<void> {
    const h = this.held.get(id)
    if (!h) return
    h.live -= 1
    if (h.mode === 'exclusive' || (h.live <= 0 && h.uses >= h.maxUses)) await this.remove(id)
  }

  /** Removes every container this instance holds and stops the sweep. */
  async stop(): Promise<void> {
    this.options.clock.clearTimeout(this.timer)
    for (const id of [...this.held.keys()]) await this.remove(id)
  }

  private async remove(id: string): Promise<void> {
    this.held.delete(id)
    try {
      await this.options.docker.getContainer(id).remove({ force: true })
      this.counts.containers_removed += 1
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 404) throw e
    }
  }

  /** Runs the health check `cmd` until it passes. @throws HealthCheckError when it has not by the deadline. */
  private async waitHealthy(container: Docker.Container, cmd: string[]): Promise<void> {
    const deadline = Date.now() + (this.options.healthTimeoutMs ?? 10_000)
    let last = 'not run'
    while (Date.now() < deadline) {
      const r = await execIn(this.options.docker, container, cmd, Math.max(1, deadline - Date.now()))
      if (r.exitCode === 0) return
      last = `exit ${r.exitCode}${r.stderr ? `: ${r.stderr.slice(0, 200)}` : ''}`
    }
    throw new HealthCheckError(cmd, last)
  }
}
