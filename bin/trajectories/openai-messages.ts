import type { ChatMessage } from '../../protocols/index.ts'

/**
 * The messages of an exported episode as a valid OpenAI conversation: every `tool` message answers
 * a call of the assistant message before it (its `tool_call_id` is one of that message's
 * `tool_calls[].id`, each answered once). The environment answers a turn without a tool call with
 * a `user` message (`actors/environment/session.ts`); episodes recorded before it did carry a
 * `tool` message with `tool_call_id: "none"` there, which OpenAI's API, its fine-tuning format and
 * Hugging Face chat templates refuse. Such a tool message without its call becomes the `user`
 * message the environment sends now, with the same content. (The token view of those old episodes
 * keeps what the policy read then: a tool turn.) Messages are not changed otherwise.
 */
export function openAiMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = []
  let open = new Set<string>()
  for (const m of messages) {
    if (m.role === 'assistant') open = new Set((m.tool_calls ?? []).map((c) => c.id))
    else if (m.role === 'tool') {
      if (open.delete(m.tool_call_id)) out.push(m)
      else out.push({ role: 'user', content: m.content })
      continue
    } else open = new Set()
    out.push(m)
  }
  return out
}

/**
 * A row's task metrics with one name for the turn count: `turns` (the row's own `turns` field too).
 * The environment's per-step `turn` (1-based index of the step the metrics come from) is the same
 * number on the final step, so it is left out.
 */
export function rowMetrics(metrics: Readonly<Record<string, number>>): Record<string, number> {
  const { turn: _turn, ...rest } = metrics
  return rest
}
