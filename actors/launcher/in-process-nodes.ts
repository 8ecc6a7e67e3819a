import { join } from 'node:path'
import type { Logger } from 'pino'
import { chooseBackend } from '../../gpu/index.ts'
import type { NodeConfig } from '../node/index.ts'
import { type NodeHandle, startLearnerNode, startRolloutNode } from '../node/index.ts'
import type { InProcessTransport } from '../runtime/index.ts'
import {
  type ActorSystem,
  closeRoleLogger,
  createRoleLogger,
  infoLines,
  startActorSystem,
} from '../runtime/index.ts'
import { RoleFailedError } from './errors.ts'
import { inProcessThreads } from './role-threads.ts'

/** Options of `startInProcessNodes`. */
export interface InProcessNodeOptions {
  /** Each role appends its progress lines to `<logsDir>/<role>.log`, as its process would. */
  logsDir: string
  /** Called with each actor that failed past its restart limit (the process cannot restart it). */
  onEscalate?: (path: string, error: unknown) => void
  /** Called once per role when its log file cannot be written (a full disk); its lines are dropped. */
  onLogError?: (role: string, file: string, err: Error) => void
}

/** The learner and rollout roles of a run, in this process. */
export interface InProcessNodes {
  /**
   * Resolves when the learner's work is done (its step budget). Rejects with `RoleFailedError` when
   * a role fails to start or fails while running: in one process nothing restarts it.
   */
  readonly finished: Promise<void>
  /**
   * Stops the rollout role, then the learner (its last checkpoint), then the actor system. A role
   * still starting is waited for (the learner's cold-start SFT cannot be cut short), except where it
   * waits on the other role: the rollout waiting for the learner's first weights stops at once (a
   * learner that failed to start never publishes them).
   */
  stop(): Promise<void>
}

/**
 * The one-process layout of a run: the learner role and the rollout role (environments, engines,
 * reward model, env adapter, agent loops) in this process, on one `InProcessTransport` and one actor
 * system, with the same node code as `triad worker --role learner|rollout` runs in two processes.
 * The trajectory stream and the weights bucket are the in-process ones of `transport`
 * (`actors/pipeline/in-process-trajectory-stream.ts`, `actors/weights/in-process-blobs.ts`). The
 * roles start at once, side by side, as two processes would; this function does not wait for them.
 *
 * The native engine's threads: one pool for both roles, of the larger count `config.threads` gives,
 * else `TRIAD_THREADS`, else every core (`inProcessThreads`); a count above the cores fails both
 * roles with `RoleFailedError` (its cause a `ThreadCountError`).
 *
 * What this layout does not have: process isolation (a role that fails, or an uncaught error, ends
 * the run instead of one restarted process), machines beyond this one, more than one core, and
 * observers outside the process (`triad monitor`, `triad status`).
 */
export function startInProcessNodes(
  transport: InProcessTransport,
  given: NodeConfig,
  options: InProcessNodeOptions,
): InProcessNodes {
  // One pool of native threads serves both roles: each role's backend choice sets the same count.
  const threads = inProcessThreads(given.threads)
  const config: NodeConfig =
    threads === undefined ? given : { ...given, threads: { learner: threads, rollout: threads } }
  const logs: Logger[] = []
  // Each role's lines as pino lines in its log file, as its own process would write them.
  const logTo = (role: string) => {
    const file = join(options.logsDir, `${role}.log`)
    const logger = createRoleLogger({ role, id: role, run: config.run }, file, (err) =>
      options.onLogError?.(role, file, err),
    )
    logs.push(logger)
    return infoLines(logger)
  }
  const system: ActorSystem = startActorSystem({ name: `run-${config.run}` })
  system.onEscalate((e) => options.onEscalate?.(e.path, e.error))
  // The tensor backend is one per process: choose it once before the roles start (two first
  // initialisations of the wasm backend at the same time fail, and one role fell back to 'cpu').
  const backend = chooseBackend({ backend: config.backend, threads, log: () => {} })
  const learnerLog = logTo('learner')
  const rolloutLog = logTo('rollout')
  const stopping = new AbortController()
  const learner = backend.then(() =>
    startLearnerNode(system, transport, config, 'learner', { log: learnerLog, signal: stopping.signal }),
  )
  const rollout = backend.then(() =>
    startRolloutNode(system, transport, config, 'rollout', { log: rolloutLog, signal: stopping.signal }),
  )
  // The rollout side never ends the run by finishing (the learner does); it ends it by failing.
  const never = new Promise<void>(() => {})
  const failed = (role: string) => (err: unknown) => {
    throw new RoleFailedError(role, err, join(options.logsDir, `${role}.log`))
  }
  const finished = Promise.race([
    learner.then((h) => h.done).catch(failed('learner')),
    rollout
      .then((h) => h.done)
      .then(() => never)
      .catch(failed('rollout')),
  ])
  finished.catch(() => undefined)
  const stopRole = async (starting: Promise<NodeHandle>) => {
    const handle = await starting.catch(() => undefined)
    await handle?.stop()
  }
  return {
    finished,
    async stop() {
      stopping.abort()
      await stopRole(rollout)
      await stopRole(learner)
      await system.stop()
      for (const logger of logs) closeRoleLogger(logger)
    },
  }
}
