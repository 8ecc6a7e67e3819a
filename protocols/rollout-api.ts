import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * The rollout driver's control API on `Subjects.rollout(run, id)`: its status. (The driver's work
 * goes out on the trajectory stream; this is how `triad status` and NATS tooling see it.)
 */

/** `rollout.status`: the driver's counts and latest metrics. */
export const RolloutStatus = defineMessage('rollout.status', z.object({}))

/** Reply to `rollout.status`. */
export const RolloutState = defineMessage(
  'rollout.state',
  z.object({
    /** The newest learner weight version announced (what new groups record as `started_version`). */
    version: z.number().int().nonnegative(),
    /** Groups finished and handed to the trajectory stream since this driver started. */
    groups: z.number().int().nonnegative(),
    /** The driver's counters (`rollout/episodes`, `rollout/groups`, ...), as in its metrics report. */
    metrics: z.record(z.string(), z.number()),
  }),
)

/** Requests the rollout driver accepts. */
export const rolloutRequests = [RolloutStatus] as const
/** Replies the rollout driver sends. */
export const rolloutReplies = [RolloutState] as const
