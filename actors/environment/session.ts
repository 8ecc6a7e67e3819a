import type { ChatMessage, Millis, ToolMessage, UserMessage } from '../../protocols/index.ts'
import { SessionStatus } from '../../protocols/index.ts'
import { SessionEndedError } from './errors.ts'
import type { ResolvedInstance } from './instance.ts'
import type { AnyTask, OpenContext, TaskEpisode } from './task.ts'
import type { ToolArgsValidator } from './tool-args.ts'

/**
 * One episode of a task behind the function-call API: applies the policy's assistant messages
 * (with `tool_calls`) to the task's `TaskEpisode` and decides the status of every step. Everything
 * the policy can get wrong becomes a status and a tool message that says what was wrong, never an
 * exception: a message that is not an assistant message or has no tool call, an unknown tool,
 * arguments that are not JSON or break the tool's schema (all `invalid_action`), too many turns
 * (`turn_limit`), too much text (`context_limit`), a task that throws (`task_error`).
 *
 * The answer to a turn without a tool call is a `user` message, not a `tool` one: an OpenAI
 * conversation has no tool message without the call it answers (`tool_call_id`), and the API, the
 * fine-tuning format and Hugging Face chat templates refuse one. Every tool call is answered by a
 * `tool` message with its id.
 */

/** The result of one `interact`: the body of `env.interacted`. */
export interface SessionStep {
  done: boolean
  /** 0 before the end; the outcome (1 solved, 0 not) on the step that ends the episode. */
  reward: number
  status: SessionStatus
  /**
   * One `role: "tool"` message per tool call, in call order; for a turn without calls (or a message
   * that is not an assistant's), one `role: "user"` message saying what was wrong.
   */
  messages: (ToolMessage | UserMessage)[]
  /**
   * Per step: `step_good` (1 when every call of the turn was good: the ground-truth label for a
   * reward model), `invalid` (1 for an invalid action), `tool_errors` (calls that failed in the
   * tool), `turn` (1-based). At the end also `success` (0/1), `turns`, `invalid_actions`,
   * `context_bytes`, `difficulty`.
   */
  metrics: Record<string, number>
}

/** UTF-8 size of the text a message adds to the context: its content and tool-call arguments. */
export function messageBytes(message: ChatMessage): number {
  let n = Buffer.byteLength(message.content ?? '')
  if (message.role === 'assistant')
    for (const c of message.tool_calls ?? []) n += Buffer.byteLength(c.function.name + c.function.arguments)
  return n
}

/** One running episode. Made with `Session.open`; ended by `interact` or `cancel`. */
export class Session {
  /** Current status; `running` until the episode ends. */
  status: SessionStatus = SessionStatus.Running
  /** Assistant turns so far. */
  turns = 0
  /** Context size so far, see `messageBytes`. */
  contextBytes: number
  /** Invalid actions so far. */
  invalidActions = 0
  /** Time of the last start or interact (for idle expiry). */
  lastActive: Millis
  private closed = false

  private constructor(
    readonly id: string,
    readonly task: AnyTask,
    readonly resolved: ResolvedInstance,
    private readonly episode: TaskEpisode,
    private readonly validator: ToolArgsValidator,
    now: Millis,
  ) {
    this.contextBytes = episode.messages.reduce((n, m) => n + messageBytes(m), 0)
    this.lastActive = now
  }

  /** Opens an episode of a resolved instance. Throws what the task's `open` throws. */
  static async open(
    id: string,
    task: AnyTask,
    resolved: ResolvedInstance,
    validator: ToolArgsValidator,
    now: Millis,
    context: OpenContext = {},
  ): Promise<Session> {
    const episode = await task.open(resolved.instance, context)
    return new Session(id, task, resolved, episode, validator, now)
  }

  /** The first messages of the episode. */
  get firstMessages(): ChatMessage[] {
    return this.episode.messages
  }

  /** True once the episode has ended (any status but `running`). */
  get done(): boolean {
    return this.status !== SessionStatus.Running
  }

  /**
   * Applies one policy message.
   * @throws SessionEndedError when the session has already ended.
   */
  async interact(message: ChatMessage, now: Millis): Promise<SessionStep> {
    if (this.done) throw new SessionEndedError(this.id, this.status)
    this.lastActive = now
    this.turns += 1
    this.contextBytes += messageBytes(message)
    const out: (ToolMessage | UserMessage)[] = []
    let invalid = false
    let allGood = true
    let toolErrors = 0
    let ended: { success: boolean } | undefined
    let taskError = false

    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : []
    if (message.role !== 'assistant') {
      invalid = true
      out.push(this.note('error: send an assistant message with tool_calls'))
    } else if (calls.length === 0) {
      invalid = true
      out.push(this.note(`error: no tool call; call one of: ${this.validator.names().join(', ')}`))
    }
    for (const call of calls) {
      if (ended || taskError) {
        out.push({ role: 'tool', tool_call_id: call.id, content: 'error: not run, the episode is over' })
        continue
      }
      const checked = this.validator.check(call)
      if (!checked.ok) {
        invalid = true
        allGood = false
        out.push({ role: 'tool', tool_call_id: call.id, content: checked.message })
        continue
      }
      try {
        const outcome = await this.episode.call(checked.name, checked.args)
        out.push({ role: 'tool', tool_call_id: call.id, content: outcome.content })
        if (!outcome.good) allGood = false
        if (outcome.toolError) toolErrors += 1
        if (outcome.done) ended = { success: outcome.success === true }
      } catch (e) {
        taskError = true
        allGood = false
        out.push({
          role: 'tool',
          tool_call_id: call.id,
          content: `error: the task failed: ${(e as Error).message}`,
        })
      }
    }
    for (const m of out) this.contextBytes += messageBytes(m)
    if (invalid) this.invalidActions += 1

    // Status priority: the task failing, the episode ending, a limit, an invalid action. An
    // invalid action within the allowance reports `invalid_action` and keeps the session open.
    const limits = this.task.limits
    let status: SessionStatus = SessionStatus.Running
    let finished = true
    if (taskError) status = SessionStatus.TaskError
    else if (ended) status = SessionStatus.Completed
    else if (this.contextBytes > limits.maxContextBytes) status = SessionStatus.ContextLimit
    else if (this.turns >= limits.maxTurns) status = SessionStatus.TurnLimit
    else if (invalid) {
      status = SessionStatus.InvalidAction
      finished = this.invalidActions > limits.maxInvalidActions
    } else finished = false
    const success = ended?.success === true
    const metrics: Record<string, number> = {
      step_good: allGood && !invalid ? 1 : 0,
      invalid: invalid ? 1 : 0,
      tool_errors: toolErrors,
      turn: this.turns,
    }
    if (finished) {
      this.status = status
      metrics.success = success ? 1 : 0
      metrics.turns = this.turns
      metrics.invalid_actions = this.invalidActions
      metrics.context_bytes = this.contextBytes
      metrics.difficulty = this.resolved.difficulty
      await this.close()
    }
    return { done: finished, reward: finished && success ? 1 : 0, status, messages: out, metrics }
  }

  /** Ends the session now with `cancelled` (no effect on a session already ended). */
  async cancel(): Promise<void> {
    if (!this.done) this.status = SessionStatus.Cancelled
    await this.close()
  }

  /** Ends the session with `status` (a lost worker, an expired session) and releases it. */
  async abort(status: SessionStatus): Promise<void> {
    if (!this.done) this.status = status
    await this.close()
  }

  /** The environment's answer to a turn that made no tool call: a user turn (see the class doc). */
  private note(content: string): UserMessage {
    return { role: 'user', content }
  }

  private async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.episode.close?.()
  }
}
