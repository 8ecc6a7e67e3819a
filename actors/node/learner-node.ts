import type { Millis } from '../../protocols/index.ts'
import { LEARNER_LOCK_FILE, lockRunDir } from '../run/index.ts'
import type { ActorSystem, Transport } from '../runtime/index.ts'
import { defaultSupervision, Restart, Strategy, startTree, type TreeSpec } from '../runtime/index.ts'
import type { NodeConfig } from './config.ts'
import { startLearnerActor } from './learner-actor.ts'

/** Options of the node roles. */
export interface NodeOptions {
  /**
   * Where the role's progress lines go (default stderr, prefixed `[learner]` or `[rollout]`; a
   * worker process's stderr is its log file).
   */
  log?: (line: string) => void
  /**
   * Aborts a start that waits on another role (the rollout waiting for the learner's tokenizer or
   * first weights): the start then rejects with `StartAbortedError`. Work of the role's own (the
   * learner's cold-start SFT) is not cut short.
   */
  signal?: AbortSignal
}

/** A started node role. */
export interface NodeHandle {
  /**
   * Resolves when the role's work is done (the learner: `maxSteps` reached); rejects with the
   * error of a child that failed past its tree's restart intensity.
   */
  done: Promise<void>
  /** The ids of the role's tree children running now, in start order. */
  children(): string[]
  /** Stops the tree's children in reverse start order. */
  stop(): Promise<void>
}

/**
 * How long the learner's stop may take, ms: the step in progress is never cut short, and the
 * steps since the last checkpoint are checkpointed. A worker process bounds its whole stop by
 * `CHILD_STOP_WATCHDOG_MS` anyway.
 */
const LEARNER_SHUTDOWN_MS: Millis = 600_000

/**
 * The learner process's supervision tree, read top to bottom:
 *
 * - `run-lock`: the run directory's `learner.lock` (`LEARNER_LOCK_FILE`), held from the start until
 *   every other child stopped, so a resume refuses while this learner runs; a stale one (its learner
 *   died) is taken over.
 * - `learner`: the learner actor (`startLearnerActor`): tokenizer, resume or cold-start SFT, then
 *   GRPO-TCR steps from the trajectory stream until `maxSteps`; the NATS service `triad-learner`.
 *   Significant: its end at the step budget ends the tree.
 *
 * One-for-all with intensity 0: the learner's state (its tensors, the groups it holds
 * unacknowledged) lives in this process, so any failure ends the tree and the process, and the
 * process supervisor starts a new one that resumes from the newest checkpoint; the groups the
 * dead learner held come back from the stream after `LEARNER_ACK_WAIT_MS`.
 */
export function learnerTree(
  transport: Transport,
  config: NodeConfig,
  id: string,
  log: (line: string) => void,
): TreeSpec {
  return {
    name: 'learner',
    strategy: Strategy.OneForAll,
    intensity: 0,
    periodMs: 60_000,
    backoff: defaultSupervision.backoff,
    children: [
      {
        id: 'run-lock',
        restart: Restart.Permanent,
        shutdownMs: 5_000,
        start: async () => {
          const lock = await lockRunDir(config.runDir, { file: LEARNER_LOCK_FILE, log })
          return { actors: [], stop: () => lock.release() }
        },
      },
      {
        id: 'learner',
        restart: Restart.Transient,
        significant: true,
        shutdownMs: LEARNER_SHUTDOWN_MS,
        start: (ctx) => startLearnerActor(ctx, transport, config, id, log),
      },
    ],
  }
}

/**
 * The learner node: starts `learnerTree` in `system`.
 * @throws NoReadableCheckpointError when the run has step checkpoints but none can be read;
 *   RunLockedError when another live learner holds the directory's `learner.lock`.
 */
export async function startLearnerNode(
  system: ActorSystem,
  transport: Transport,
  config: NodeConfig,
  id: string,
  options: NodeOptions = {},
): Promise<NodeHandle> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[learner] ${line}\n`))
  const tree = await startTree(system, learnerTree(transport, config, id, log), { log })
  return { done: tree.done, children: () => tree.children(), stop: () => tree.stop() }
}
