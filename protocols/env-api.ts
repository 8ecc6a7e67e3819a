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

/**
 * Reply to `env.interact`: tool results come back as `role: "tool"` messages, one per call; a turn
 * without a tool call is answered by one `role: "user"` message.
 */
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

// ---------------------------------------------------------------------------------------------
// Controller, worker and admin messages (between env workers and the controller; admin tools).

/** Counters a worker reports (monotonic since the worker started, except `active`). */
export const EnvWorkerCountsSchema = z.object({
  started: z.number().int(),
  ended: z.number().int(),
  expired: z.number().int(),
  cancelled: z.number().int(),
  errors: z.number().int(),
  interactions: z.number().int(),
})

/** `env.heartbeat` (published by each worker every `interval_ms`; the first one registers it). */
export const EnvHeartbeat = defineMessage(
  'env.heartbeat',
  z.object({
    /** The worker's id, unique in the run. */
    worker: z.string(),
    /** The worker's own subject (sticky `interact`/`cancel`). */
    subject: z.string(),
    /** Most sessions at once. */
    capacity: z.number().int().nonnegative(),
    /** Live sessions. */
    active: z.number().int().nonnegative(),
    /** Task names served. */
    tasks: z.array(z.string()),
    /** True once drained: finishes its sessions, takes no new ones. */
    draining: z.boolean(),
    /** Ids of the live sessions. */
    sessions: z.array(z.string()),
    /** Heartbeat period, ms; three missed periods make the worker silent. */
    interval_ms: z.number().positive(),
    counts: EnvWorkerCountsSchema,
  }),
)

/** A container the controller made for a session (for tasks that declare an image). */
export const EnvContainerSchema = z.object({ id: z.string(), name: z.string() })

/** `env.worker_start`: the controller's `env.start` forwarded to the chosen worker. */
export const EnvWorkerStart = defineMessage(
  'env.worker_start',
  z.object({
    start: EnvStart.schema,
    /** The container made for this session, when the task declares an image. */
    container: EnvContainerSchema.optional(),
  }),
)

/** `env.drain`: stop giving `worker` new sessions (it finishes the ones it has). */
export const EnvDrain = defineMessage('env.drain', z.object({ worker: z.string() }))

/** `env.cancel_all`: cancel every session of every worker (or of one). */
export const EnvCancelAll = defineMessage('env.cancel_all', z.object({ worker: z.string().optional() }))

/** `env.list`: the controller's view of its workers. */
export const EnvList = defineMessage('env.list', z.object({}))

/** One worker as the controller sees it. */
export const EnvWorkerInfoSchema = z.object({
  worker: z.string(),
  subject: z.string(),
  /** `live`, `draining`, or `silent` (no heartbeat for three intervals: takes no new sessions). */
  state: z.enum(['live', 'draining', 'silent']),
  capacity: z.number().int(),
  active: z.number().int(),
  tasks: z.array(z.string()),
  /** Time since the last heartbeat, ms. */
  last_seen_ms: z.number(),
})

/** Reply to `env.list`. */
export const EnvWorkers = defineMessage(
  'env.workers',
  z.object({
    workers: z.array(EnvWorkerInfoSchema),
    /** Controller counters: routed starts, refused starts, lost sessions, containers ... */
    counts: z.record(z.string(), z.number()),
  }),
)

/** Reply to `env.drain` and `env.cancel_all`. */
export const EnvAck = defineMessage(
  'env.ack',
  z.object({
    message: z.string(),
    /** Sessions affected (cancelled, or left to finish on a drained worker). */
    sessions: z.number().int(),
  }),
)

/** `env.worker_lost` (published on the env events subject): a silent worker's sessions failed. */
export const EnvWorkerLost = defineMessage(
  'env.worker_lost',
  z.object({ worker: z.string(), sessions: z.array(z.string()), silent_ms: z.number() }),
)

/** The controller, worker and admin messages. */
export const envControlMessages = [
  EnvHeartbeat,
  EnvWorkerStart,
  EnvDrain,
  EnvCancelAll,
  EnvList,
  EnvWorkers,
  EnvAck,
  EnvWorkerLost,
] as const
