import type { ChatFormat } from '../../gpu/index.ts'
import type { AssistantMessage } from '../../protocols/index.ts'

/** What one gateway call produced, for its reply. */
export interface CompletionTurn {
  /** `chatcmpl-...` id of the reply. */
  id: string
  model: string
  /** Unix time, s. */
  created: number
  message: AssistantMessage
  /** The engine's: `stop` (end of turn) or `length` (token budget). */
  engineFinish: 'stop' | 'length'
  /** The sampled ids `[n]` and their behavior log-probabilities `[n]`. */
  tokens: Int32Array
  logprobs: Float32Array
  promptTokens: number
  withLogprobs: boolean
}

const finishReason = (t: CompletionTurn) =>
  t.engineFinish === 'length' ? 'length' : t.message.tool_calls?.length ? 'tool_calls' : 'stop'

/** Per-token `logprobs.content` of OpenAI's reply: the token's text, log-probability and UTF-8 bytes. */
function tokenLogprobs(chat: ChatFormat, t: CompletionTurn) {
  return Array.from(t.tokens, (id, i) => {
    const token = chat.decode([id])
    return {
      token,
      logprob: t.logprobs[i]!,
      // A token that is part of a UTF-8 sequence decodes to U+FFFD alone: its bytes are not known here.
      bytes: token.includes('\uFFFD') ? null : [...Buffer.from(token, 'utf8')],
      top_logprobs: [],
    }
  })
}

const usage = (t: CompletionTurn) => ({
  prompt_tokens: t.promptTokens,
  completion_tokens: t.tokens.length,
  total_tokens: t.promptTokens + t.tokens.length,
})

/** OpenAI's `chat.completion` object of one call. */
export function completionObject(chat: ChatFormat, t: CompletionTurn) {
  return {
    id: t.id,
    object: 'chat.completion',
    created: t.created,
    model: t.model,
    choices: [
      {
        index: 0,
        message: { ...t.message, refusal: null },
        logprobs: t.withLogprobs ? { content: tokenLogprobs(chat, t), refusal: null } : null,
        finish_reason: finishReason(t),
      },
    ],
    usage: usage(t),
  }
}

/**
 * The `chat.completion.chunk` objects of one call streamed as server-sent events (the turn is
 * generated whole, then sent as chunks): the role, the content, each tool call (with its `index`),
 * the finish reason, and `usage` last when asked for (`stream_options.include_usage`).
 */
export function completionChunks(chat: ChatFormat, t: CompletionTurn, includeUsage: boolean): object[] {
  const base = { id: t.id, object: 'chat.completion.chunk', created: t.created, model: t.model }
  const chunk = (delta: object, finish: string | null = null, logprobs: object | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  })
  const out: object[] = [chunk({ role: 'assistant', content: '', refusal: null })]
  if (t.message.content)
    out.push(
      chunk(
        { content: t.message.content },
        null,
        t.withLogprobs ? { content: tokenLogprobs(chat, t), refusal: null } : null,
      ),
    )
  for (const [index, c] of (t.message.tool_calls ?? []).entries())
    out.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: c.function }] }))
  out.push(chunk({}, finishReason(t)))
  if (includeUsage) out.push({ ...base, choices: [], usage: usage(t) })
  return out
}
