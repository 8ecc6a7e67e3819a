import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Bytes } from '../protocols/index.ts'

/** Where cgroup v1 controllers are mounted. */
const V1_ROOT = '/sys/fs/cgroup'
const CONTROLLERS = ['memory', 'pids', 'cpu'] as const

/**
 * One cgroup (v1: memory, pids and cpu controllers) that holds the processes of one local
 * sandbox slot. Made only where this process may create cgroups (root on a v1 host).
 */
export class SlotCgroup {
  /** `cgroup.procs` files: a process written there (with its future children) joins the group. */
  readonly procsFiles: string[]
  private readonly dirs: string[]

  private constructor(dirs: string[]) {
    this.dirs = dirs
    this.procsFiles = dirs.map((d) => join(d, 'cgroup.procs'))
  }

  /**
   * Creates (or reuses) `triad-sandbox/<name>` under each controller.
   * @returns the group, or undefined when cgroup v1 is not available or not writable.
   */
  static tryCreate(
    name: string,
    o: { memoryBytes: Bytes; pids: number; cpus: number },
  ): SlotCgroup | undefined {
    if (!CONTROLLERS.every((c) => existsSync(join(V1_ROOT, c, 'cgroup.procs')))) return undefined
    const dirs = CONTROLLERS.map((c) => join(V1_ROOT, c, 'triad-sandbox', name))
    try {
      for (const d of dirs) mkdirSync(d, { recursive: true })
      const group = new SlotCgroup(dirs)
      group.setMemory(o.memoryBytes)
      writeFileSync(join(dirs[1]!, 'pids.max'), String(o.pids))
      writeFileSync(join(dirs[2]!, 'cpu.cfs_period_us'), '100000')
      writeFileSync(join(dirs[2]!, 'cpu.cfs_quota_us'), String(Math.round(o.cpus * 100000)))
      return group
    } catch {
      return undefined
    }
  }

  /** The memory controller's `memory.oom_control` (its `oom_kill` line counts processes killed by
   *  the limit). */
  get oomControlFile(): string {
    return join(this.dirs[0]!, 'memory.oom_control')
  }

  /** Sets the memory limit (bytes) for the next job. */
  setMemory(bytes: Bytes): void {
    writeFileSync(join(this.dirs[0]!, 'memory.limit_in_bytes'), String(bytes))
  }

  /** Processes in the group now. */
  processes(): number[] {
    return readFileSync(this.procsFiles[1]!, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number)
  }

  /** Removes the group's directories once they hold no process (waits up to `waitMs`, then leaves
   *  them for `sweep`). */
  async remove(waitMs = 2000): Promise<void> {
    const until = Date.now() + waitMs
    for (const d of this.dirs) {
      for (;;) {
        try {
          rmdirSync(d)
          break
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || Date.now() > until) break
          await new Promise((r) => setTimeout(r, 20))
        }
      }
    }
  }

  /** Removes the empty groups `local-<pid>-<slot>` left by servers that are gone. */
  static sweep(): void {
    for (const c of CONTROLLERS) {
      const base = join(V1_ROOT, c, 'triad-sandbox')
      let names: string[]
      try {
        names = readdirSync(base)
      } catch {
        continue
      }
      for (const n of names) {
        const pid = /^local-(\d+)-\d+$/.exec(n)?.[1]
        if (!pid) continue
        try {
          process.kill(Number(pid), 0)
          continue
        } catch {
          // the owner is gone
        }
        try {
          rmdirSync(join(base, n))
        } catch {
          // still holds a process
        }
      }
    }
  }
}
