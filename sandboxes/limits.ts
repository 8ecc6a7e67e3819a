import type { Bytes, Seconds } from '../protocols/index.ts'

/**
 * Server-side limits of a sandbox. A request may ask for less (its `memory_limit_MB`, timeouts)
 * but never for more: larger asks are clamped to these.
 */
export interface SandboxLimits {
  /** Jobs running at once (docker: warm containers in the pool; local: slots). */
  concurrency: number
  /** Requests allowed to wait for a slot; more get HTTP 503. */
  maxQueue: number
  /** Memory of one job, MiB (cgroup limit; RLIMIT_AS only where no cgroup can be made). */
  memoryMB: number
  /** Processes and threads of one job. */
  pids: number
  /** CPU cores of one job (docker NanoCpus; local cgroup cpu quota). */
  cpus: number
  /** Bytes kept of each of stdout and stderr; a program that writes more is killed. */
  outputBytes: Bytes
  /** Largest file a job may write (RLIMIT_FSIZE). */
  fileBytes: Bytes
  /** Size of the tmpfs work dir (and of /tmp). */
  workdirBytes: Bytes
  /** Total bytes of fetched files returned. */
  fetchBytes: Bytes
  /** Largest `run_timeout` / `compile_timeout` honoured, seconds. */
  maxTimeout: Seconds
  /** Open files of one job (RLIMIT_NOFILE). */
  openFiles: number
  /** Docker: runs served by one container before it is replaced. */
  recycleAfter: number
}

/** Defaults: sized for a 2-core machine running many short programs. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = {
  concurrency: 4,
  maxQueue: 4096,
  memoryMB: 512,
  pids: 128,
  cpus: 1,
  outputBytes: 1 << 20,
  fileBytes: 64 << 20,
  workdirBytes: 128 << 20,
  fetchBytes: 16 << 20,
  maxTimeout: 300,
  openFiles: 1024,
  recycleAfter: 200,
}
