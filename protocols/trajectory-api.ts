import { z } from 'zod'
import { ChatMessageSchema } from './chat.ts'
import { SessionStatusSchema } from './env-api.ts'
import { defineMessage, type PayloadOf } from './message.ts'

/**
 * Trajectories, as the rollout side publishes them to the JetStream stream (subject
 * `Subjects.trajectory(run, task)`) and the learner consumes them. One message is one group: the G
 * samples of one task instance, so the learner always takes whole groups (GRPO needs them).
 */

/** One sampled trajectory: the whole token sequence of a multi-turn episode. */
export const TrajectorySchema = z.object({
  /** Every token of the episode `[T]` int32: prompt, generated turns, tool results. */
  tokens: z.instanceof(Int32Array),
  /** `[T]` uint8: 1 on tokens the policy generated (the loss counts them), 0 elsewhere. */
  loss_mask: z.instanceof(Uint8Array),
  /** `[T]` float32: behavior log-probability of each generated token (0 where the mask is 0). */
  logprobs: z.instanceof(Float32Array),
  /** `[T]` int32: weight version that generated each token (-1 where the mask is 0). */
  versions: z.instanceof(Int32Array),
  /** Start offsets of each assistant turn in `tokens` `[turns]` int32 (for step-wise rewards). */
  turn_starts: z.instanceof(Int32Array),
  /** Outcome reward O of the episode (task reward, before shaping). */
  reward: z.number(),
  /** Final session status. */
  status: SessionStatusSchema,
  /** Number of assistant turns. */
  turns: z.number().int().nonnegative(),
  /** Task metrics of the final step, plus per-turn ground-truth labels `step_good/<j>` where the task gives them. */
  metrics: z.record(z.string(), z.number()),
  /** Number of turns served by a stale engine. */
  stale_turns: z.number().int().nonnegative(),
  /**
   * The reward model's judgements of the assistant steps `[turns * m]` int8, step-major: +1 good,
   * -1 bad, 0 unparseable (RLAnything). Present only when the `stepReward` switch is on.
   */
  judgements: z.instanceof(Int8Array).optional(),
  /** `[turns * m]` int32: the sampled verdict tokens of `judgements` (for training the reward model). */
  judge_tokens: z.instanceof(Int32Array).optional(),
  /** `[turns * m]` float32: their log-probabilities under the reward model that sampled them. */
  judge_logprobs: z.instanceof(Float32Array).optional(),
  /** `[turns]` judge prompts, each `[promptLen]` int32, the verdicts were sampled after. */
  judge_prompts: z.array(z.instanceof(Int32Array)).optional(),
  /** Weight version of the reward model that judged. */
  judge_version: z.number().int().nonnegative().optional(),
  /**
   * The episode as OpenAI chat messages: the session's first messages, each assistant message as
   * parsed from its sampled ids, and the tool results, the last step's too (for exports and the
   * reward model's judge prompts; the learner trains on `tokens`, which end before that last result
   * when the environment ended the episode).
   * Not cut to the context like `tokens`.
   */
  messages: z.array(ChatMessageSchema).optional(),
})
export type Trajectory = z.infer<typeof TrajectorySchema>

/** `trajectory.group`: the G samples of one task instance. */
export const TrajectoryGroup = defineMessage(
  'trajectory.group',
  z.object({
    /** Unique id of the group (`<rollout id>-<counter>`). */
    group_id: z.string(),
    task: z.string(),
    /** Instance index and seed, so the instance can be replayed. */
    index: z.number().int().nonnegative(),
    seed: z.number().int(),
    difficulty: z.number().int(),
    /** The learner version when the group started. */
    started_version: z.number().int().nonnegative(),
    samples: z.array(TrajectorySchema).min(1),
  }),
)

/** The payload of a `trajectory.group` message. */
export type TrajectoryGroupPayload = PayloadOf<typeof TrajectoryGroup>

export const trajectoryMessages = [TrajectoryGroup] as const
