import { readFileSync } from 'node:fs'
import {
  type Bytes,
  type CommandRunResult,
  CommandRunStatus,
  type RunCodeRequest,
  type RunCodeResponse,
  RunStatus,
  type Seconds,
  statusOf,
} from '../protocols/index.ts'
import { SandboxRequestError } from './errors.ts'
import { languageCommands } from './languages.ts'
import type { SandboxLimits } from './limits.ts'
import { checkRequest } from './request-checks.ts'

/**
 * The job runner that runs inside every sandbox (`runner.py`, Python standard library only): it
 * writes the files, compiles, runs with a wall-clock limit and an output limit, kills every
 * leftover process, reads the fetched files back and wipes the work dir. Started as
 * `python3 -I -S -c RUNNER_SOURCE`, the job as JSON on stdin, the result as JSON on stdout.
 */
export const RUNNER_SOURCE: string = readFileSync(new URL('./runner.py', import.meta.url), 'utf8')

/** The runner's command line inside a sandbox. */
export const RUNNER_ARGV: readonly string[] = ['/usr/bin/python3', '-I', '-S', '-c', RUNNER_SOURCE]

/**
 * The python fork server of a warm slot (`fork-server.py`): one pre-started interpreter that forks a
 * fresh child per python request, which drops to the job's user, limits and work dir and runs
 * main.py, so a request skips the interpreter's start-up. The runner starts it on the first python
 * job and falls back to spawning (breach `fork_server_lost`, the slot is then replaced) when it dies
 * or does not answer in 2 s.
 */
export const FORK_SERVER_SOURCE: string = readFileSync(new URL('./fork-server.py', import.meta.url), 'utf8')

/** Languages served through the fork server. The others gain nothing from one: bash starts in about
 *  1 ms, node cannot fork a warm interpreter (its threads do not survive `fork`), and cpp's time is
 *  the compiler's. */
export const FORK_LANGUAGES: readonly string[] = ['python']

/**
 * Command line of a warm slot's long-lived runner (`serve`), with the fork server when asked
 * (started at once, with `forkServerEnv(limits)`). Jobs
 * come on its stdin and results go to its stdout, or both over the unix stream socket at `connect`
 * (a path inside the sandbox), which the runner connects to when it starts.
 */
export function runnerServeArgv(forkServer: boolean, limits: SandboxLimits, connect?: string): string[] {
  return [
    ...RUNNER_ARGV,
    'serve',
    ...(connect === undefined ? [] : ['--connect', connect]),
    ...(forkServer ? ['--fork-env', JSON.stringify(forkServerEnv(limits)), FORK_SERVER_SOURCE] : []),
  ]
}

/**
 * The environment of a python job under `limits` (what `makeJob` gives it). The runner starts its
 * fork server with it before the first job, so a fresh slot's first python request does not wait
 * for an interpreter (a job whose environment differs restarts the server).
 */
export function forkServerEnv(limits: SandboxLimits): Record<string, string> {
  return {
    ...SANDBOX_ENV,
    ...languageCommands('python', { memoryMB: limits.memoryMB, cpus: limits.cpus, workdir: WORKDIR }).env,
  }
}

/** Environment of the user's program: nothing of the server's. */
export const SANDBOX_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  TMPDIR: '/tmp',
  LANG: 'C.UTF-8',
}

/** One job as the runner reads it (see runner.py). */
export interface RunnerJob {
  workdir: string
  uid: number
  gid: number
  source: string
  code: string
  stdin: string | null
  files: Record<string, string | null>
  fetch_files: string[]
  compile: readonly string[] | null
  run: readonly string[]
  compile_timeout: Seconds
  run_timeout: Seconds
  output_limit: Bytes
  fetch_limit: Bytes
  rlimits: Record<string, number>
  env: Record<string, string>
  cleanup: string[]
  /** How the runner finds leftover processes: `all` (own PID namespace), `uid` (the job's uid), `group`. */
  kill_mode: 'all' | 'uid' | 'group'
  /** Run the program through the slot's fork server (python in a warm slot). */
  fork: boolean
  /** After the job, remove the System V shm/sem/msg objects of the job's uid and every /dev/mqueue
   *  entry (set where the sandbox has its own IPC namespace, so all of them are the job's). */
  ipc_cleanup: boolean
  /** The memory cgroup's `memory.oom_control` inside the sandbox (its `oom_kill` count tells a job's
   *  processes killed by the memory limit), or null where there is none. */
  oom_file: string | null
}

/** Why a backend must not reuse its sandbox after a job (docker recycles the container). */
export type Breach =
  | 'time_limit'
  | 'output_limit'
  | 'signal'
  | 'leftover_processes'
  | 'cleanup_failed'
  /** The memory limit killed a process of the job (the run is Failed even if its main process exited 0). */
  | 'memory_limit'
  /** The fork server died or hung; the program was spawned instead (or reaped by the runner). */
  | 'fork_server_lost'

/** What the runner writes back. */
export type RunnerResult =
  | {
      compile: CommandRunResult | null
      run: CommandRunResult | null
      files: Record<string, string>
      breaches: Breach[]
      notes: string[]
    }
  | { error: string }

/** The work dir of a job inside the sandbox. */
export const WORKDIR = '/work'

/** Memory limit of a job, MiB: the request's ask clamped to the server's limit (-1 means the limit). */
export function memoryOf(request: RunCodeRequest, limits: SandboxLimits): number {
  return request.memory_limit_MB <= 0 ? limits.memoryMB : Math.min(request.memory_limit_MB, limits.memoryMB)
}

/**
 * Builds the runner job of a request.
 * @throws SandboxRequestError for what `checkRequest` refuses, or files larger than the work dir.
 */
export function makeJob(
  request: RunCodeRequest,
  limits: SandboxLimits,
  o: {
    uid: number
    gid: number
    cleanup: string[]
    workdir?: string
    killMode?: RunnerJob['kill_mode']
    rlimitAsBytes?: Bytes
    /** Serve `FORK_LANGUAGES` through the slot's fork server (default false). */
    fork?: boolean
    /** Set RLIMIT_NPROC to `limits.pids` (default true). RLIMIT_NPROC counts every process of the
     *  uid on the host, so it is only right where each sandbox has a uid of its own (both backends
     *  give each slot one). */
    nproc?: boolean
    ipcCleanup?: boolean
    oomFile?: string | null
  },
): RunnerJob {
  checkRequest(request, limits)
  const workdir = o.workdir ?? WORKDIR
  const lang = languageCommands(request.language, {
    memoryMB: memoryOf(request, limits),
    cpus: limits.cpus,
    workdir,
  })
  let total = Buffer.byteLength(request.code)
  for (const b64 of Object.values(request.files)) total += ((b64?.length ?? 0) * 3) / 4
  if (total > limits.workdirBytes)
    throw new SandboxRequestError(
      `files and code take ${Math.round(total)} bytes, over the work dir size of ${limits.workdirBytes}`,
      413,
    )
  const rlimits: Record<string, number> = {
    nofile: limits.openFiles,
    fsize: limits.fileBytes,
    core: 0,
  }
  if (o.nproc ?? true) rlimits['nproc'] = limits.pids
  if (o.rlimitAsBytes !== undefined) rlimits['as'] = o.rlimitAsBytes
  return {
    workdir,
    uid: o.uid,
    gid: o.gid,
    source: lang.source,
    code: request.code,
    stdin: request.stdin ?? null,
    files: request.files,
    fetch_files: request.fetch_files,
    compile: lang.compile,
    run: lang.run,
    compile_timeout: Math.min(request.compile_timeout, limits.maxTimeout),
    run_timeout: Math.min(request.run_timeout, limits.maxTimeout),
    output_limit: limits.outputBytes,
    fetch_limit: limits.fetchBytes,
    rlimits,
    env: { ...SANDBOX_ENV, ...lang.env },
    cleanup: o.cleanup,
    kill_mode: o.killMode ?? 'all',
    fork: (o.fork ?? false) && FORK_LANGUAGES.includes(request.language),
    ipc_cleanup: o.ipcCleanup ?? false,
    oom_file: o.oomFile ?? null,
  }
}

/**
 * Parses the runner's stdout.
 * @returns the result, or `{error}` when the runner wrote no valid result (it crashed or was killed).
 */
export function parseRunnerOutput(stdout: string, stderr: string): RunnerResult {
  try {
    const r = JSON.parse(stdout) as RunnerResult
    if (r && typeof r === 'object') return r
  } catch {
    // falls through
  }
  return {
    error: `the runner wrote no result (stdout ${stdout.length} chars; stderr: ${stderr.slice(-500)})`,
  }
}

/** A command result for a command that the sandbox could not run. */
export function errorResult(stderr: string): CommandRunResult {
  return {
    status: CommandRunStatus.Error,
    execution_time: null,
    return_code: null,
    stdout: null,
    stderr,
  }
}

/** Builds the `/run_code` response of a runner result, applying the status rule. */
export function responseOf(result: RunnerResult): RunCodeResponse {
  if ('error' in result)
    return {
      status: RunStatus.SandboxError,
      message: result.error,
      compile_result: null,
      run_result: errorResult(result.error),
      files: {},
    }
  const notes = [...result.notes]
  if (result.compile?.status === CommandRunStatus.TimeLimitExceeded) notes.push('compile time limit exceeded')
  if (result.run?.status === CommandRunStatus.TimeLimitExceeded) notes.push('run time limit exceeded')
  if (
    result.run &&
    result.run.return_code === -9 &&
    !result.breaches.includes('output_limit') &&
    !result.breaches.includes('memory_limit')
  )
    notes.push('the program was killed by SIGKILL (memory limit or kill)')
  const status = statusOf([result.compile, result.run])
  return {
    status:
      status === RunStatus.Success && result.breaches.includes('memory_limit') ? RunStatus.Failed : status,
    message: notes.join('; '),
    compile_result: result.compile,
    run_result: result.run,
    files: result.files,
  }
}
