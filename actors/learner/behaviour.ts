import {
  type Envelope,
  ErrorCode,
  errorReply,
  LearnerCheckpoint,
  LearnerCheckpointed,
  LearnerState,
  LearnerStatus,
  LearnerStep,
  LearnerStepped,
  learnerReplies,
  learnerRequests,
  MessageRegistry,
  MetricsReport,
  type PayloadOf,
  Subjects,
} from '../../protocols/index.ts'
import type { ActorSystem, Behaviour, SpawnOptions } from '../runtime/actor-system.ts'
import { type Exposed, exposeActor } from '../runtime/bridge.ts'
import type { Transport } from '../runtime/transport.ts'
import { BatchError } from './errors.ts'
import { type Learner, latestCheckpoint } from './learner.ts'

/** Messages the learner actor accepts. */
export const learnerAccepts = new MessageRegistry([...learnerRequests])
/** Replies of the learner actor. */
export const learnerRepliesRegistry = new MessageRegistry([...learnerReplies])

/** Settings of the learner actor. */
export interface LearnerActorOptions {
  /**
   * Makes the learner; called at start and again after every crash restart. When the learner has
   * a `checkpointDir` holding a checkpoint, the newest one is loaded, so a restart resumes there.
   */
  create: () => Promise<Learner>
  /** Where to publish `metrics.report` after each step (role `learner`, keys `learner/<rl-step key>`); none when absent. */
  metrics?: { transport: Transport; run: string; id: string; clock?: () => number }
  /** Checkpoint root to resume from at start (the learner's `checkpointDir`). */
  resumeFrom?: string
}

/** The actor's state: the learner (re-made by `init` after a restart). */
export interface LearnerActorState {
  learner: Learner
}

/**
 * The learner actor: `learner.step` -> one RL step (reply `learner.stepped`), `learner.status` ->
 * `learner.state`, `learner.checkpoint` -> `learner.checkpointed`. A batch that cannot be packed
 * is an `invalid_message` error reply; anything else that throws crashes the actor and its
 * supervisor restarts it from the latest checkpoint.
 */
export function learnerBehaviour(options: LearnerActorOptions): Behaviour<LearnerActorState> {
  return {
    async init() {
      const learner = await options.create()
      const resume = options.resumeFrom ? await latestCheckpoint(options.resumeFrom) : undefined
      if (resume) await learner.loadCheckpoint(resume)
      return { learner }
    },
    async receive(state, message): Promise<Envelope> {
      const { learner } = state
      switch (message.type) {
        case LearnerStep.type: {
          const { groups } = message.payload as PayloadOf<typeof LearnerStep>
          let metrics: Awaited<ReturnType<Learner['step']>>
          try {
            metrics = await learner.step(groups)
          } catch (err) {
            if (err instanceof BatchError)
              return errorReply({ code: ErrorCode.InvalidMessage, message: err.message })
            throw err
          }
          if (options.metrics) {
            const { transport, run, id, clock } = options.metrics
            const values: Record<string, number> = {}
            for (const [k, v] of Object.entries(metrics))
              values[k.startsWith('learner/') ? k : `learner/${k}`] = v
            transport.publish(
              Subjects.metrics(run, 'learner'),
              MetricsReport.make({
                role: 'learner',
                id,
                step: learner.version,
                time: (clock ?? Date.now)(),
                values,
              }),
            )
          }
          const checkpoint = learner.stepCheckpoint
          return LearnerStepped.make({
            version: learner.version,
            metrics,
            ...(checkpoint ? { checkpoint } : {}),
          })
        }
        case LearnerStatus.type:
          return LearnerState.make({
            version: learner.version,
            steps: learner.steps,
            metrics: learner.lastMetrics,
            ...(learner.lastCheckpoint ? { checkpoint: learner.lastCheckpoint } : {}),
          })
        case LearnerCheckpoint.type: {
          await learner.saveCheckpoint()
          return LearnerCheckpointed.make({ version: learner.version, path: learner.lastCheckpoint! })
        }
        default:
          return errorReply({
            code: ErrorCode.UnknownType,
            message: `the learner does not handle '${message.type}'; it handles ${learnerAccepts.types().join(', ')}`,
          })
      }
    },
    stop(state) {
      state.learner.dispose()
    },
  }
}

/**
 * Spawns the learner actor named `learner` and exposes it on `Subjects.learner(run)`, registered as
 * the NATS service `triad-learner`.
 */
export async function startLearner(
  system: ActorSystem,
  transport: Transport,
  run: string,
  options: LearnerActorOptions,
  spawn: SpawnOptions = {},
): Promise<{ exposed: Exposed; ref: ReturnType<ActorSystem['spawn']> }> {
  const ref = system.spawn('learner', learnerBehaviour(options), spawn)
  const exposed = await exposeActor(transport, ref, {
    subject: Subjects.learner(run),
    accepts: learnerAccepts,
    askTimeoutMs: 600_000,
    service: { name: 'triad-learner', description: 'triad RL learner (GRPO-TCR)', metadata: { run } },
  })
  return { exposed, ref }
}
