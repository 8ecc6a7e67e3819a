import { z } from 'zod'
import { defineMessage } from './message.ts'
import { TrajectoryGroup } from './trajectory-api.ts'

/**
 * The learner's control API on `Subjects.learner(run)`: one RL step on whole groups, status,
 * checkpoint on demand. (In a full run the learner takes trajectories from the JetStream stream;
 * `learner.step` carries them inline, for tests, the synchronous baseline and small batches:
 * keep it under the server's `max_payload`.)
 */

/** `learner.step`: one GRPO-TCR update on these groups (each the G samples of one task instance). */
export const LearnerStep = defineMessage(
  'learner.step',
  z.object({
    groups: z.array(TrajectoryGroup.schema).min(1),
  }),
)

/** Reply to `learner.step`. */
export const LearnerStepped = defineMessage(
  'learner.stepped',
  z.object({
    /** Weight version after the step (learner steps taken, counting from the initial version). */
    version: z.number().int().nonnegative(),
    /** The step's metrics, keys namespaced as in `gpu/rl-step.ts` (`policy/clip_frac_high`, `reward/mean/<task>`). */
    metrics: z.record(z.string(), z.number()),
    /** Directory of the checkpoint written after this step, when the interval fell on it. */
    checkpoint: z.string().optional(),
  }),
)

/** `learner.status`: the learner's version, step count and latest metrics. */
export const LearnerStatus = defineMessage('learner.status', z.object({}))

/** Reply to `learner.status`. */
export const LearnerState = defineMessage(
  'learner.state',
  z.object({
    version: z.number().int().nonnegative(),
    /** Steps taken by this learner process (since its last start). */
    steps: z.number().int().nonnegative(),
    /** Directory of the latest checkpoint written or loaded, if any. */
    checkpoint: z.string().optional(),
    /** Metrics of the latest step (empty before the first). */
    metrics: z.record(z.string(), z.number()),
  }),
)

/** `learner.checkpoint`: write a checkpoint now. */
export const LearnerCheckpoint = defineMessage('learner.checkpoint', z.object({}))

/** Reply to `learner.checkpoint`. */
export const LearnerCheckpointed = defineMessage(
  'learner.checkpointed',
  z.object({
    version: z.number().int().nonnegative(),
    /** The checkpoint directory. */
    path: z.string(),
  }),
)

/** Requests the learner accepts. */
export const learnerRequests = [LearnerStep, LearnerStatus, LearnerCheckpoint] as const
/** Replies the learner sends. */
export const learnerReplies = [LearnerStepped, LearnerState, LearnerCheckpointed] as const
/** Every message type of the learner API. */
export const learnerMessages = [...learnerRequests, ...learnerReplies] as const
