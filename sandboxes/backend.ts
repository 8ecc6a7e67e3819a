import type { RunCodeRequest } from '../protocols/index.ts'
import type { RunnerResult } from './runner-job.ts'

/** Names of the sandbox backends. Closed set. */
export const BackendKind = { Docker: 'docker', Local: 'local' } as const
export type BackendKind = (typeof BackendKind)[keyof typeof BackendKind]

/** Counters of a backend, for `/health` and benchmarks. */
export interface BackendStats {
  /** Jobs running now. */
  running: number
  /** Jobs waiting for a slot. */
  queued: number
  /** Jobs done since start. */
  done: number
  /** Docker: containers replaced (after N runs or a breach). */
  recycled: number
}

/**
 * Where jobs run. `execute` takes a validated request, waits for a free slot, runs the job and
 * resolves with the runner's result; infrastructure failures resolve as `{error}` (never reject),
 * except SandboxBusyError (queue full) and SandboxRequestError (bad request), which reject.
 */
export interface SandboxBackend {
  readonly kind: BackendKind
  /** The isolation actually in force: `docker`, `bwrap` or `rlimits`. */
  readonly isolation: string
  /** Prepares the backend (warm containers, cgroups). Throws when it cannot run at all. */
  start(): Promise<void>
  execute(request: RunCodeRequest): Promise<RunnerResult>
  stats(): BackendStats
  /** Stops accepting work, waits for running jobs, frees containers and cgroups. */
  close(): Promise<void>
}
