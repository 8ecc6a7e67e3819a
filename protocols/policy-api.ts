import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * The policy engines' API. Fresh engines serve `Subjects.policyFresh(run)` in queue group
 * `policy-fresh`, stale engines `Subjects.policyStale(run)` in `policy-stale`; both speak
 * `policy.generate`. Prompts are token ids: the rollout side renders the chat, so a trajectory
 * keeps exactly the tokens the policy saw.
 */

const Int32ArraySchema = z.instanceof(Int32Array)
const Float32ArraySchema = z.instanceof(Float32Array)

/** `policy.generate`: continue `prompt` (token ids, int32) by at most `max_new_tokens` tokens. */
export const PolicyGenerate = defineMessage(
  'policy.generate',
  z.object({
    /** The whole context so far, token ids `[promptLen]` int32. */
    prompt: Int32ArraySchema,
    /** Most tokens to generate. */
    max_new_tokens: z.number().int().positive(),
    /** Softmax temperature (0 = greedy). */
    temperature: z.number().min(0).default(1),
    /** Nucleus mass in (0, 1]. */
    top_p: z.number().gt(0).max(1).default(1),
    /** Token ids that end the generation (kept as its last token). */
    stop_tokens: z.array(z.number().int().nonnegative()).default([]),
    /** Seed of this request's sampling. */
    seed: z.number().int().optional(),
  }),
)

/** Reply to `policy.generate`. */
export const PolicyGenerated = defineMessage(
  'policy.generated',
  z.object({
    /** Generated token ids `[n]` int32 (the stop token included when one ended it). */
    tokens: Int32ArraySchema,
    /** Behavior log-probability of each token under the sampling distribution, `[n]` float32. */
    logprobs: Float32ArraySchema,
    /** Weight version that produced every token of this reply. */
    version: z.number().int().nonnegative(),
    finish_reason: z.enum(['stop', 'length']),
    /** Id of the engine that served the request. */
    engine: z.string(),
    /** True when a stale engine served it. */
    stale: z.boolean(),
  }),
)

export const policyMessages = [PolicyGenerate, PolicyGenerated] as const
