import { z } from 'zod'
import { ChatMessageSchema, ToolSchemaSchema } from './chat.ts'
import { defineMessage } from './message.ts'

/**
 * The environment function-call API (AgentRL's unified API): `env.start`, `env.interact`,
 * `env.cancel` and their replies. Messages are OpenAI chat messages; tools are OpenAI tool schemas.
 */

/** Status of a session after a step. Closed set. */
export const SessionStatus = {
  Running: 'running',
  Completed: 'completed',
  ContextLimit: 'context_limit',
  InvalidAction: 'invalid_action',
  TurnLimit: 'turn_limit',
  TaskError: 'task_error',
  Cancelled: 'cancelled',
} as const
export type SessionStatus = (typeof SessionStatus)[keyof typeof SessionStatus]
export const SessionStatusSchema = z.enum(Object.values(SessionStatus) as [SessionStatus, ...SessionStatus[]])

/** `env.start`: begin an episode of `task`. */
export const EnvStart = defineMessage(
  'env.start',
  z.object({
    /** Task name, for example `calc`. */
    task: z.string().min(1),
    /** Instance index within the task's split; random when absent. */
    index: z.number().int().nonnegative().optional(),
    /** Seed of the instance generator; random when absent. */
    seed: z.number().int().optional(),
    /** Integer difficulty level; the task's default when absent. */
    difficulty: z.number().int().optional(),
    /** `train` (default) or `eval` (the held-out split). */
    split: z.enum(['train', 'eval']).optional(),
  }),
)

/** Reply to `env.start`. `worker` is the subject to send `interact` and `cancel` to (sticky). */
export const EnvStarted = defineMessage(
  'env.started',
  z.object({
    session: z.string(),
    worker: z.string(),
    messages: z.array(ChatMessageSchema),
    tools: z.array(ToolSchemaSchema),
  }),
)

/** `env.interact`: the policy's assistant message (with `tool_calls`) for one turn. */
export const EnvInteract = defineMessage(
  'env.interact',
  z.object({
    session: z.string(),
    message: ChatMessageSchema,
  }),
)

/** Reply to `env.interact`: tool results come back as `role: "tool"` messages. */
export const EnvInteracted = defineMessage(
  'env.interacted',
  z.object({
    done: z.boolean(),
    /** Reward of this step (the outcome when `done`). */
    reward: z.number(),
    status: SessionStatusSchema,
    messages: z.array(ChatMessageSchema),
    /** Task-specific numbers (success, steps, step labels ...). */
    metrics: z.record(z.string(), z.number()),
  }),
)

/** `env.cancel`: end a session now. */
export const EnvCancel = defineMessage('env.cancel', z.object({ session: z.string() }))

/** Reply to `env.cancel`. */
export const EnvCancelled = defineMessage('env.cancelled', z.object({ session: z.string() }))

/** Every message type of the environment API. */
export const envMessages = [
  EnvStart,
  EnvStarted,
  EnvInteract,
  EnvInteracted,
  EnvCancel,
  EnvCancelled,
] as const
