import type { AssistantMessage, ChatMessage } from '../../protocols/index.ts'

/**
 * Helpers for scripted experts: a "deliberate turn" (DemyAgent) is an assistant message whose
 * content is a short plan, followed by exactly one tool call.
 */

/**
 * An assistant message with a plan and one tool call. `turn` numbers the call id (`c1`, `c2`, ...),
 * kept short because a small model reads every byte.
 */
export function deliberateTurn(
  plan: string,
  turn: number,
  name: string,
  args: Record<string, unknown>,
): AssistantMessage {
  return {
    role: 'assistant',
    content: plan,
    tool_calls: [{ id: `c${turn}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  }
}

/** The content of the last tool message, or undefined when there is none yet. */
export function lastToolResult(messages: readonly ChatMessage[]): string | undefined {
  const last = messages[messages.length - 1]
  return last?.role === 'tool' ? last.content : undefined
}

/** Number of assistant messages so far (the next turn is this plus one). */
export function assistantTurns(messages: readonly ChatMessage[]): number {
  return messages.filter((m) => m.role === 'assistant').length
}
