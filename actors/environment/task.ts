import type { AssistantMessage, Bytes, ChatMessage, ToolSchema } from '../../protocols/index.ts'
import type { TaskRng } from './rng.ts'
import type { CodeRunner } from './tasks/code-runner.ts'

/**
 * How to write a task (an environment) for triad. A task is a read-only definition: its tools as
 * OpenAI schemas, its limits, an instance generator with integer difficulty levels, and `open`,
 * which makes an `TaskEpisode` of one instance. The session layer (`session.ts`) does everything that
 * is the same for all tasks: JSON parsing and schema validation of tool arguments, unknown tools,
 * turn and context limits, statuses, rewards at the end.
 */

/** Which part of a task's instances: `train`, or `eval` (held out: never produced for `train`). */
export const Split = { Train: 'train', Eval: 'eval' } as const
export type Split = (typeof Split)[keyof typeof Split]

/** Limits of one episode; the session ends with the matching status when one is reached. */
export interface TaskLimits {
  /** Most assistant turns (interacts); the next turn past it ends with `turn_limit`. */
  maxTurns: number
  /** Most bytes of message text (contents and tool-call arguments, UTF-8) in the conversation;
   *  beyond it the session ends with `context_limit`. */
  maxContextBytes: Bytes
  /** Invalid actions (no tool call, unknown tool, arguments not JSON or breaking the schema)
   *  tolerated; the one past this ends the session with `invalid_action`. */
  maxInvalidActions: number
}

/** The integer difficulty levels of a task: `min..max`, `default` when a start names none. */
export interface DifficultyLevels {
  min: number
  max: number
  default: number
}

/** What one tool call did. */
export interface ToolOutcome {
  /** Text of the `role: "tool"` message returned to the policy. */
  content: string
  /** Ground-truth label of this step for a reward model: true when the call moved the episode
   *  toward the solution (maze: the move brought the agent closer to the goal; sql: the query
   *  returned the rows holding the answer; calc: the result is an intermediate value of the
   *  solution; code: the run passed more tests). */
  good: boolean
  /** True when the episode is over (an answer was submitted, the goal reached, a budget spent). */
  done?: boolean
  /** With `done`: whether the episode was solved (outcome reward 1, else 0). */
  success?: boolean
  /** True when the call failed inside the tool (SQL error, blocked move): counted in metrics. */
  toolError?: boolean
}

/** One running episode of a task instance. Made by `Task.open`; closed by the session. */
export interface TaskEpisode {
  /** The first messages (system and user) shown to the policy. */
  readonly messages: ChatMessage[]
  /**
   * Handles one tool call whose name is one of the task's tools and whose arguments already
   * passed the tool's JSON schema. Throwing means the task itself failed (`task_error`).
   */
  call(name: string, args: Record<string, unknown>): ToolOutcome | Promise<ToolOutcome>
  /** Releases what the episode holds (database, container). Called once, at the end. */
  close?(): void | Promise<void>
}

/** A container made for a session (tasks that declare `container`). */
export interface ContainerHandle {
  readonly id: string
  readonly name: string
  /** Runs a command in the container; stdout and stderr are cut at 64 KiB each. */
  exec(
    cmd: string[],
    options?: { timeoutMs?: number },
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>
}

/** What `open` gets besides the instance. */
export interface OpenContext {
  /** The session's container, when the task declares one. */
  container?: ContainerHandle
}

/** How a task's sessions get containers: the controller makes them through dockerode. */
export interface ContainerSpec {
  /** A locally built image (never pulled). */
  image: string
  /** The command that keeps the container running (default `['sleep', '86400']`). */
  cmd?: string[]
  /** `exclusive`: one session, then removed; `shared`: reused by up to `maxUses` sessions. */
  mode: 'exclusive' | 'shared'
  /** Sessions per shared container before it is replaced. Default 8. */
  maxUses?: number
  /** Memory limit, bytes. Default 128 MiB. */
  memoryBytes?: number
  /** Process limit. Default 64. */
  pids?: number
  /** CPU limit in cores. Default 0.5. */
  cpus?: number
  /** A command that exits 0 once the container is ready (default `['true']`). */
  health?: string[]
}

/** Options of a scripted expert. */
export interface ExpertOptions {
  /** Probability, per tool step, of a mistake that the expert then notices and recovers from. */
  errorRate: number
  /** Probability that the episode ends solved; otherwise the expert ends with a wrong answer or
   *  gives up, the way a weak policy would. */
  successRate: number
  /** Seed of the expert's own choices (mistakes, wording). */
  seed: number
}

/** Something that chooses the next assistant message (a scripted expert, a model). */
export interface Policy {
  /** The assistant message for the conversation so far; tool calls go in `tool_calls`. */
  act(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Promise<AssistantMessage>
}

/**
 * A task definition. `I` is the instance type (a problem: the numbers of a calc question, the
 * rows and question of an sql episode, a maze layout).
 */
export interface Task<I = unknown> {
  /** Registry name: `calc`, `sql`, `maze`, `code`. */
  readonly name: string
  /** One line for people (CLI listings). */
  readonly description: string
  /** The tools, as OpenAI schemas. Keep descriptions short: a small model reads them. */
  readonly tools: readonly ToolSchema[]
  readonly limits: TaskLimits
  readonly difficulty: DifficultyLevels
  /** Makes one instance at an integer difficulty. Must use only `rng` for randomness. */
  generate(rng: TaskRng, difficulty: number): I
  /** A string that identifies an instance's content; it decides the instance's split (an
   *  instance whose key hashes into the eval share is never produced for train). */
  key(instance: I): string
  /** Starts an episode of an instance. */
  open(instance: I, context?: OpenContext): TaskEpisode | Promise<TaskEpisode>
  /** Set when every session needs a container (made by the controller). */
  readonly container?: ContainerSpec
  /**
   * Set when the task runs programs in a code sandbox: a run, `triad env try` and `triad eval`
   * check that sandbox with a real program before they start (`checkTaskSandboxes`).
   */
  readonly sandbox?: SandboxNeed
  /** A scripted expert for an instance: it may read the instance (privileged), but acts only
   *  through the tools, so the trajectory it writes is real. */
  expert(instance: I, options: ExpertOptions): Policy
}

/** What a task that runs programs in a code sandbox declares (`Task.sandbox`). */
export interface SandboxNeed {
  /** Where the task's programs run, for people: the sandbox URL, or the backend in this process. */
  where(): string
  /**
   * Opens a runner like the one the task's episodes use; the caller closes it.
   * @throws what the runner's start throws (SandboxUnreachableError for a sandbox URL that does not answer).
   */
  open(): Promise<CodeRunner>
}

/** A task with its instance type erased, as stored in the registry. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds tasks of every instance type
export type AnyTask = Task<any>
