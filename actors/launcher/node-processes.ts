import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ProcessSupervisor, SupervisedProcess } from './process-supervisor.ts'

/**
 * The installed `triad` command: it registers tsx from this package itself, so the process starts
 * from any working directory (`--import tsx` is resolved from the working directory, and fails
 * outside the clone).
 */
const triadBin = fileURLToPath(new URL('../../bin/triad.js', import.meta.url))

/** Where the node processes of a run find their config and their NATS server. */
export interface NodeProcessOptions {
  /** The run's `node-config.json`. */
  configFile: string
  /** NATS server URL(s). */
  nats: string
  /** Each process appends its output to `<logsDir>/<role>.log`. */
  logsDir: string
  /** Variables added to a role's environment, by role (`roleThreadsEnv`: its share of the cores). */
  env?: Readonly<Record<string, Readonly<Record<string, string>>>>
  /** Called once per role when its log file cannot be written (a full disk); the log stops there. */
  onLogError?: (role: string, file: string, err: Error) => void
}

/**
 * Starts one `triad worker --role <role>` process per role under `supervisor` (the default
 * layout of a run: `learner` and `rollout` in two processes, so both cores work). The learner is
 * `transient` (its clean exit at the step budget ends the run); the others are `permanent`.
 */
export function startNodeProcesses(
  supervisor: ProcessSupervisor,
  roles: readonly string[],
  options: NodeProcessOptions,
): Record<string, SupervisedProcess> {
  const out: Record<string, SupervisedProcess> = {}
  for (const role of roles) {
    const logFile = join(options.logsDir, `${role}.log`)
    out[role] = supervisor.start({
      name: role,
      command: process.execPath,
      args: [
        triadBin,
        'worker',
        '--role',
        role,
        '--config',
        options.configFile,
        '--nats',
        options.nats,
        '--id',
        role,
      ],
      logFile,
      ...(options.onLogError ? { onLogError: (err: Error) => options.onLogError?.(role, logFile, err) } : {}),
      ...(options.env?.[role] ? { env: { ...options.env[role] } } : {}),
      restart: role === 'learner' ? 'transient' : 'permanent',
    })
  }
  return out
}
