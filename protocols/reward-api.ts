import { z } from 'zod'
import { ChatMessageSchema, ToolCallSchema } from './chat.ts'
import { defineMessage } from './message.ts'

/**
 * The reward model's API (RLAnything's generative step judge; docs/design.md#algorithms, dynamic
 * triad). The reward-model actor serves `reward.judge` on `Subjects.rewardJudge(run)` in queue
 * group `reward` (NATS service `triad-reward`): for every step it returns m judgements in {-1, +1}
 * (0 when the sampled verdict could not be parsed), each with the log-probability of its verdict
 * token, which the learner needs to train the reward model with the GRPO loss.
 */

/** An assistant message (the step being judged), as in `ChatMessageSchema`. */
const AssistantStepSchema = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  tool_calls: z.array(ToolCallSchema).optional(),
})

/**
 * One step to judge: the task, the conversation before the step, the step itself, and what the
 * environment answered it.
 */
export const JudgeStepSchema = z.object({
  /** Task name, for example `calc`. */
  task: z.string().min(1),
  /** The conversation up to (not including) the step: system, user, earlier assistant and tool turns. */
  history: z.array(ChatMessageSchema),
  /** The assistant step being judged. */
  step: AssistantStepSchema,
  /**
   * The tool messages that answered the step (its observation: a value, an error, `blocked`,
   * `wrong`); judged with the step when present. Absent: the step is judged before its effect.
   */
  result: z.array(ChatMessageSchema).optional(),
})
export type JudgeStep = z.infer<typeof JudgeStepSchema>

/** `reward.judge`: judge each step m times. */
export const RewardJudge = defineMessage(
  'reward.judge',
  z.object({
    steps: z.array(JudgeStepSchema).min(1),
    /** Judgements per step; the actor's default when absent. */
    m: z.number().int().positive().max(64).optional(),
    /** Seed of this request's sampling; the actor's own counter when absent. */
    seed: z.number().int().optional(),
  }),
)

/** Reply to `reward.judge`; every array is `[steps * m]`, step-major (step j, judgement l at `j*m + l`). */
export const RewardJudged = defineMessage(
  'reward.judged',
  z.object({
    m: z.number().int().positive(),
    /** `[steps*m]` int8: +1 good, -1 bad, 0 unparseable. */
    judgements: z.instanceof(Int8Array),
    /** `[steps*m]` float32: log-probability of each sampled verdict token under the sampling distribution. */
    logprobs: z.instanceof(Float32Array),
    /** `[steps*m]` int32: the sampled verdict token ids. */
    tokens: z.instanceof(Int32Array),
    /** Weight version of the reward model that judged. */
    version: z.number().int().nonnegative(),
  }),
)

/**
 * `reward.load_weights`: replace the reward model's weights (in-process; the pipeline fetches them
 * from the object store announced by `weights.published` with model `reward`). Weights by parameter
 * name, float32, shapes as `paramShapes` of the model's config.
 */
export const RewardLoadWeights = defineMessage(
  'reward.load_weights',
  z.object({
    version: z.number().int().nonnegative(),
    weights: z.record(z.string(), z.instanceof(Float32Array)),
  }),
)

/** Reply to `reward.load_weights`. */
export const RewardWeightsLoaded = defineMessage(
  'reward.weights_loaded',
  z.object({ version: z.number().int().nonnegative() }),
)

export const rewardMessages = [RewardJudge, RewardJudged, RewardLoadWeights, RewardWeightsLoaded] as const
