import { z } from 'zod'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { ApiError, ApiErrorType } from './errors.ts'

/**
 * The body of `POST /v1/chat/completions` that `triad serve` accepts: the OpenAI chat-completions
 * request, restricted to what the server really does. A field it would have to ignore (`stop`, a
 * non-zero penalty, a forced `tool_choice`) is refused with HTTP 400 naming it, never accepted and
 * dropped; an unknown field is refused too.
 */

/** Message content: a string, or OpenAI's list of text parts (joined). */
const Content = z.union([
  z.string(),
  z
    .array(z.strictObject({ type: z.literal('text'), text: z.string() }))
    .transform((parts) => parts.map((p) => p.text).join('')),
])

const ToolCall = z.strictObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
})

const Message = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: Content, name: z.string().optional() }),
  z.strictObject({ role: z.literal('developer'), content: Content, name: z.string().optional() }),
  z.strictObject({ role: z.literal('user'), content: Content, name: z.string().optional() }),
  z.strictObject({
    role: z.literal('assistant'),
    content: Content.nullish(),
    tool_calls: z.array(ToolCall).optional(),
    name: z.string().optional(),
  }),
  z.strictObject({
    role: z.literal('tool'),
    content: Content,
    tool_call_id: z.string(),
    name: z.string().optional(),
  }),
])

const Tool = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
})

const zeroPenalty = z.literal(0).nullish()

/** Most choices (`n`) one request may ask for. */
export const MAX_CHOICES = 16
/** Most alternatives per token (`top_logprobs`), as OpenAI's limit. */
export const MAX_TOP_LOGPROBS = 20

const RequestSchema = z.strictObject({
  model: z.string(),
  messages: z.array(Message).min(1),
  tools: z.array(Tool).nullish(),
  tool_choice: z.enum(['auto', 'none']).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  max_tokens: z.int().min(1).nullish(),
  max_completion_tokens: z.int().min(1).nullish(),
  seed: z
    .int()
    .min(0)
    .max(2 ** 32 - 1)
    .nullish(),
  n: z.int().min(1).max(MAX_CHOICES).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional() }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
  stop: z.null().optional(),
  frequency_penalty: zeroPenalty,
  presence_penalty: zeroPenalty,
  user: z.string().optional(),
})

/** A validated chat-completions request, defaults filled in. */
export interface ChatRequest {
  model: string
  /** The conversation as triad's chat messages (`developer` taken as `system`). */
  messages: ChatMessage[]
  /** Tools offered to the model (empty: none; also empty for `tool_choice: "none"`). */
  tools: ToolSchema[]
  /** 0 is greedy. Default 1. */
  temperature: number
  /** Nucleus mass in (0, 1]. Default 1. */
  top_p: number
  /** Most tokens per choice (`max_completion_tokens`, else `max_tokens`); undefined: up to the context end. */
  maxTokens: number | undefined
  /** Sampling seed of choice 0 (choice i uses `seed + i`); undefined: the server draws one. */
  seed: number | undefined
  /** Choices to generate. Default 1. */
  n: number
  stream: boolean
  /** With `stream`: send a last chunk with `usage`. */
  includeUsage: boolean
  logprobs: boolean
  /** Alternatives per token in `top_logprobs` (0 with `logprobs` false). */
  topLogprobs: number
}

/** `messages[1].content` for a zod issue path. */
export function paramOf(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`
  return out
}

/**
 * Checks a request body.
 * @throws ApiError (HTTP 400, `invalid_request_error`) naming the first bad field as `param`.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(400, 'the request body must be a JSON object', ApiErrorType.InvalidRequest)
  const r = RequestSchema.safeParse(body)
  if (!r.success) {
    const issue = r.error.issues[0]!
    const param = paramOf(issue.path)
    const what =
      issue.code === 'unrecognized_keys'
        ? `unrecognized or unsupported field ${issue.keys.map((k) => `'${param ? `${param}.` : ''}${k}'`).join(', ')}`
        : `${param || 'body'}: ${issue.message}`
    const at =
      issue.code === 'unrecognized_keys' ? (param ? `${param}.${issue.keys[0]}` : issue.keys[0]!) : param
    throw new ApiError(400, what, ApiErrorType.InvalidRequest, at || null, 'invalid_value')
  }
  const q = r.data
  if (q.top_logprobs && !q.logprobs)
    throw new ApiError(
      400,
      'top_logprobs needs logprobs: true',
      ApiErrorType.InvalidRequest,
      'top_logprobs',
      'invalid_value',
    )
  const messages: ChatMessage[] = q.messages.map((m) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: m.content }
      case 'user':
        return { role: 'user', content: m.content }
      case 'assistant':
        return m.tool_calls?.length
          ? { role: 'assistant', content: m.content ?? null, tool_calls: m.tool_calls }
          : { role: 'assistant', content: m.content ?? null }
      default:
        return m.name === undefined
          ? { role: 'tool', content: m.content, tool_call_id: m.tool_call_id }
          : { role: 'tool', content: m.content, tool_call_id: m.tool_call_id, name: m.name }
    }
  })
  const tools: ToolSchema[] =
    q.tool_choice === 'none'
      ? []
      : (q.tools ?? []).map((t) => ({
          type: 'function',
          function: {
            name: t.function.name,
            description: t.function.description ?? '',
            parameters: t.function.parameters ?? { type: 'object', properties: {} },
          },
        }))
  return {
    model: q.model,
    messages,
    tools,
    temperature: q.temperature ?? 1,
    top_p: q.top_p ?? 1,
    maxTokens: q.max_completion_tokens ?? q.max_tokens ?? undefined,
    seed: q.seed ?? undefined,
    n: q.n ?? 1,
    stream: q.stream ?? false,
    includeUsage: q.stream_options?.include_usage ?? false,
    logprobs: q.logprobs ?? false,
    topLogprobs: q.logprobs ? (q.top_logprobs ?? 0) : 0,
  }
}
