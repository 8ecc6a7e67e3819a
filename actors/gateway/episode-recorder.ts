import { type ChatFormat, TemplateError } from '../../gpu/index.ts'
import type { AssistantMessage, ChatMessage, ToolSchema, Trajectory } from '../../protocols/index.ts'
import { type GeneratedTurn, TrajectoryBuilder } from '../rollout/index.ts'
import { ContextFullError } from './errors.ts'

/** Why a call of an episode started a new trained segment instead of extending the current one. */
export const SegmentBreak = {
  /** The call's messages do not start with the segment's messages (history edited or dropped). */
  HistoryChanged: 'history_changed',
  /** The call's tool schemas differ from the segment's (they are rendered into its first tokens). */
  ToolsChanged: 'tools_changed',
  /** The template cannot write the added messages after the segment's last turn. */
  NotContinuable: 'not_continuable',
} as const
export type SegmentBreak = (typeof SegmentBreak)[keyof typeof SegmentBreak]

/** One trained segment: an append-only token sequence and the messages it renders. */
interface Segment {
  builder: TrajectoryBuilder
  /** The messages the segment's tokens hold, each assistant message as the gateway returned it. */
  messages: ChatMessage[]
  tools: ToolSchema[]
  turns: number
  staleTurns: number
}

/** What the next generation of an episode continues: the prompt ids and where they come from. */
export interface PreparedCall {
  /** The whole prompt `[T]` int32, exactly as the engine will see it. */
  prompt: Int32Array<ArrayBuffer>
  /** Tokens the engine may still write before the context is full. */
  room: number
  /** Set when this call starts a new segment after an existing one (and why). */
  break?: SegmentBreak
  /** The context ids this call appends (the new segment's whole first context when `break` or first). */
  appended: Int32Array
  /** The messages of the call, normalized. */
  messages: ChatMessage[]
  tools: ToolSchema[]
  fresh: boolean
}

/**
 * The token-in-token-out record of one gateway episode (docs/gateway.md): the calls
 * of an agent, grouped by its session id, become trained segments whose ids are exactly those
 * the engine saw and sampled. A call whose messages extend the current segment's (the same
 * messages, assistant turns as the gateway returned them, then new tool results or user turns)
 * appends `ChatFormat.continuation` of the added messages and a generation prompt to it: the
 * returned text is never re-tokenized. Any other call (history edited, turns dropped, other tools,
 * or an extension the template cannot continue) closes the segment and starts a new one from
 * `render` of its messages; each segment is its own trajectory of the episode's group, with the
 * episode's reward, and `metrics.segment` its index.
 */
export class EpisodeRecorder {
  private readonly segments: Segment[] = []
  /** Segment breaks, by reason. */
  readonly breaks: Record<string, number> = {}
  generatedTokens = 0

  constructor(
    private readonly chat: ChatFormat,
    /** The model's context length, tokens. */
    private readonly contextLength: number,
  ) {}

  /** Number of calls recorded (assistant turns over every segment). */
  get turns(): number {
    return this.segments.reduce((s, g) => s + g.turns, 0)
  }

  /** Number of segments so far. */
  get segmentCount(): number {
    return this.segments.length
  }

  /**
   * The prompt of a call with `messages` and `tools`, without changing the record (a call whose
   * generation fails leaves no trace): the current segment continued, or a new one.
   * @throws ContextFullError when the prompt leaves no room for one generated token.
   * @throws TemplateError when the messages cannot be rendered at all.
   */
  prepare(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): PreparedCall {
    const msgs = messages.map(normalizeMessage)
    const header = this.chat.generationPrompt()
    const current = this.segments.at(-1)
    let base: Int32Array = new Int32Array(0)
    let appended: Int32Array | undefined
    let cause: SegmentBreak | undefined
    if (current) {
      cause = extensionBreak(current, msgs, tools)
      if (cause === undefined) {
        try {
          appended = this.chat.continuation(
            current.messages,
            msgs.slice(current.messages.length),
            current.tools,
          )
          base = current.builder.ids()
        } catch (err) {
          if (!(err instanceof TemplateError)) throw err
          cause = SegmentBreak.NotContinuable
        }
      }
    }
    const fresh = appended === undefined
    if (fresh) appended = this.chat.render(msgs, tools)
    const prompt = new Int32Array(base.length + appended!.length + header.length)
    prompt.set(base, 0)
    prompt.set(appended!, base.length)
    prompt.set(header, base.length + appended!.length)
    const room = this.contextLength - prompt.length - this.chat.maxCloseLength
    if (room < 1) throw new ContextFullError(prompt.length, this.contextLength)
    return {
      prompt,
      room,
      appended: appended!,
      messages: msgs,
      tools: [...tools],
      fresh,
      ...(cause !== undefined ? { break: cause } : {}),
    }
  }

  /**
   * Records a call prepared by `prepare` once the engine answered: the appended context and
   * generation prompt (mask 0), the sampled ids with their behavior log-probabilities and weight
   * version (mask 1), the turn's close; and the assistant message the gateway returns.
   */
  commit(call: PreparedCall, turn: GeneratedTurn, message: AssistantMessage): void {
    let seg = this.segments.at(-1)
    if (call.fresh || !seg) {
      if (call.break) this.breaks[call.break] = (this.breaks[call.break] ?? 0) + 1
      seg = { builder: new TrajectoryBuilder(), messages: [], tools: call.tools, turns: 0, staleTurns: 0 }
      this.segments.push(seg)
    }
    seg.builder.appendContext(call.appended)
    seg.builder.appendContext(this.chat.generationPrompt())
    seg.builder.appendGenerated(turn.tokens, turn.logprobs, turn.version)
    seg.builder.appendContext(this.chat.closeTurn(turn.tokens))
    seg.messages = [...call.messages, message]
    seg.turns++
    if (turn.stale) seg.staleTurns++
    this.generatedTokens += turn.tokens.length
  }

  /** The messages of the last segment (the episode as the agent last sent it, with the last reply). */
  messages(): ChatMessage[] {
    return [...(this.segments.at(-1)?.messages ?? [])]
  }

  /**
   * The episode's trajectories, one per segment, each with the episode's `reward` and `metrics`
   * (plus `segment`: its index, and `segments`: their number).
   */
  trajectories(rest: Pick<Trajectory, 'reward' | 'status' | 'metrics'>): Trajectory[] {
    return this.segments.map((s, i) => ({
      ...s.builder.build(
        {
          reward: rest.reward,
          status: rest.status,
          turns: s.turns,
          stale_turns: s.staleTurns,
          metrics: { ...rest.metrics, segment: i, segments: this.segments.length },
        },
        this.contextLength + 1,
      ),
      messages: s.messages,
    }))
  }
}

/** Why `msgs`/`tools` do not extend `seg`, or undefined when they do. */
function extensionBreak(seg: Segment, msgs: readonly ChatMessage[], tools: readonly ToolSchema[]) {
  if (JSON.stringify(tools) !== JSON.stringify(seg.tools)) return SegmentBreak.ToolsChanged
  if (msgs.length < seg.messages.length) return SegmentBreak.HistoryChanged
  for (let i = 0; i < seg.messages.length; i++)
    if (!sameMessage(seg.messages[i]!, msgs[i]!)) return SegmentBreak.HistoryChanged
  return undefined
}

/**
 * A message in one canonical form, so that a message the agent sends back equals the one the
 * gateway returned: `content` null or absent is `null` for an assistant, empty `tool_calls` are
 * none, extra fields (`refusal`, `annotations`) are dropped.
 */
export function normalizeMessage(m: ChatMessage): ChatMessage {
  switch (m.role) {
    case 'assistant': {
      const calls = m.tool_calls?.length ? m.tool_calls : undefined
      return {
        role: 'assistant',
        content: m.content === '' && calls ? null : (m.content ?? null),
        ...(calls
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.function.name, arguments: c.function.arguments },
              })),
            }
          : {}),
      }
    }
    case 'tool':
      return {
        role: 'tool',
        content: m.content,
        tool_call_id: m.tool_call_id,
        ...(m.name !== undefined ? { name: m.name } : {}),
      }
    default:
      return { role: m.role, content: m.content }
  }
}

/** Two normalized messages are the same turn; tool-call arguments compare as JSON values. */
function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (a.role !== 'assistant' || b.role !== 'assistant') return JSON.stringify(a) === JSON.stringify(b)
  if ((a.content ?? '') !== (b.content ?? '')) return false
  const ca = a.tool_calls ?? []
  const cb = b.tool_calls ?? []
  if (ca.length !== cb.length) return false
  return ca.every((c, i) => {
    const d = cb[i]!
    return (
      c.id === d.id &&
      c.function.name === d.function.name &&
      sameArguments(c.function.arguments, d.function.arguments)
    )
  })
}

function sameArguments(a: string, b: string): boolean {
  if (a === b) return true
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b))
  } catch {
    return false
  }
}
