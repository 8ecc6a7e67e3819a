import type { Millis } from '../../protocols/index.ts'
import { ensureTrajectoryStream } from '../pipeline/index.ts'
import { LEARNER_LOCK_FILE, lockRunDir } from '../run/index.ts'
import type { ActorSystem, ChildSpec, Transport } from '../runtime/index.ts'
import { defaultSupervision, Restart, Strategy, startTree, type TreeSpec } from '../runtime/index.ts'
import type { NodeConfig } from './config.ts'
import { startLearnerActor } from './learner-actor.ts'
import { startPolicyColdStart } from './learner-cold-start.ts'
import { startLearnerLoop } from './learner-loop.ts'
import { startLearnerModel } from './learner-model.ts'
import { LEARNER_ACK_WAIT_MS } from './learner-names.ts'
import { startRewardModelLearner } from './learner-reward-model.ts'
import { startRewardModelColdStart } from './learner-reward-model-cold-start.ts'

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

/** How long each other child of the learner tree may take to stop, ms (none holds work in flight). */
const CHILD_SHUTDOWN_MS: Millis = 5_000

/**
 * The learner process's supervision tree, read top to bottom (started in this order, stopped in
 * the reverse one). Each child registers what it made under its name (`LearnerNames`) and the
 * later ones look it up:
 *
 * - `run-lock`: the run directory's `learner.lock` (`LEARNER_LOCK_FILE`), held from the start until
 *   every other child stopped, so a resume refuses while this learner runs; a stale one (its learner
 *   died) is taken over.
 * - `learner`: the learner actor (`startLearnerActor`), the NATS service `triad-learner`, whose
 *   status answers from the start (the cold starts included); the learner's metrics report.
 * - `trajectory-stream`: makes sure the trajectory stream exists, holding the buffer plus what the
 *   learner holds unacknowledged until its next checkpoint (up to `checkpointEvery` steps of
 *   `maxBatchGroups` each; a smaller bound would deadlock), ack wait `LEARNER_ACK_WAIT_MS`.
 * - `model` (`startLearnerModel`): the tensor backend and the run's tokenizer (learned, or loaded
 *   on a resume, and published) or the pretrained policy's.
 * - `reward-model-learner` (reward-model training on; `startRewardModelLearner`): the reward model
 *   trained beside the policy.
 * - `cold-start` (`startPolicyColdStart`): the policy learner, resumed from the newest readable
 *   step checkpoint (the reward model with it) or from the cold-start SFT.
 * - `reward-model-cold-start` (step rewards and the reward model's SFT on;
 *   `startRewardModelColdStart`): the reward model's cold start, once per run.
 * - `learner-loop` (`startLearnerLoop`): publishes the first weights, then GRPO-TCR steps from the
 *   trajectory stream until `maxSteps`. Significant: its end at the step budget ends the tree.
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
  const triad = config.triad
  const child = (childId: string, start: ChildSpec['start']): ChildSpec => ({
    id: childId,
    restart: Restart.Permanent,
    shutdownMs: CHILD_SHUTDOWN_MS,
    start,
  })
  const p = config.pipeline
  return {
    name: 'learner',
    strategy: Strategy.OneForAll,
    intensity: 0,
    periodMs: 60_000,
    backoff: defaultSupervision.backoff,
    children: [
      child('run-lock', async () => {
        const lock = await lockRunDir(config.runDir, { file: LEARNER_LOCK_FILE, log })
        return { actors: [], stop: () => lock.release() }
      }),
      child('learner', (ctx) => startLearnerActor(ctx, transport, config, id)),
      child('trajectory-stream', async () => {
        await ensureTrajectoryStream(transport, {
          run: config.run,
          maxGroups:
            p.bufferGroups + p.checkpointEvery * (p.mode === 'sync' ? p.minBatchGroups : p.maxBatchGroups),
          ackWaitMs: LEARNER_ACK_WAIT_MS,
        })
        return { actors: [], stop: async () => {} }
      }),
      child('model', (ctx) => startLearnerModel(ctx, transport, config, log)),
      ...(triad?.trainRewardModel
        ? [child('reward-model-learner', (ctx) => startRewardModelLearner(ctx, config, triad))]
        : []),
      child('cold-start', (ctx) => startPolicyColdStart(ctx, config, log)),
      ...(triad?.stepReward.enabled && triad.rewardModelSft?.enabled
        ? [child('reward-model-cold-start', (ctx) => startRewardModelColdStart(ctx, config, triad, log))]
        : []),
      {
        id: 'learner-loop',
        restart: Restart.Transient,
        significant: true,
        shutdownMs: LEARNER_SHUTDOWN_MS,
        start: (ctx) => startLearnerLoop(ctx, transport, config, log),
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
