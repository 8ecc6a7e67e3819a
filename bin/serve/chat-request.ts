import { z } from 'zod'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { ApiError, ApiErrorType } from './errors.ts'

/**
 * The body of `POST /v1/chat/completions` that `triad serve` accepts: the OpenAI chat-completions
 * request, restricted to what the server really does. A parameter it would have to ignore (`stop`,
 * a non-zero penalty, a forced `tool_choice`, `logit_bias`, a JSON `response_format`) is refused
 * with HTTP 400, never accepted and dropped: "`stop` is not supported", `param` naming it and
 * `code` `unsupported_parameter` (OpenAI's error shape). Such a parameter at its "off" value (null,
 * 0, an empty list, `tool_choice: "auto"`) is accepted. An unknown field is refused the same way.
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
    // The reply's own `refusal: null`, so a client can send a returned message back as it is.
    refusal: z.null().optional(),
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
    // Strict schema adherence needs constrained decoding, which the server does not do.
    strict: z.literal(false).nullish(),
  }),
})

/** Most choices (`n`) one request may ask for. */
export const MAX_CHOICES = 16
/** Most alternatives per token (`top_logprobs`), as OpenAI's limit. */
export const MAX_TOP_LOGPROBS = 20

const RequestSchema = z.strictObject({
  model: z.string(),
  messages: z.array(Message).min(1),
  tools: z.array(Tool).nullish(),
  tool_choice: z.enum(['auto', 'none']).nullish(),
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
  user: z.string().optional(),
})

const isOff = (v: unknown) => v === undefined || v === null
const isEmptyObject = (v: unknown) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0

/**
 * OpenAI request parameters the server does not do: for each, whether a value means "off" (and is
 * accepted), and what the refusal adds after "`name` is not supported".
 */
const UNSUPPORTED: Readonly<Record<string, { off: (v: unknown) => boolean; why: string }>> = {
  stop: {
    off: (v) => isOff(v) || (Array.isArray(v) && v.length === 0),
    why: ': a reply ends at the end of its turn or at max_tokens',
  },
  frequency_penalty: { off: (v) => isOff(v) || v === 0, why: ' (only 0)' },
  parallel_tool_calls: {
    off: (v) => isOff(v) || v === true,
    why: ' (only true): a reply carries every call the model writes',
  },
  presence_penalty: { off: (v) => isOff(v) || v === 0, why: ' (only 0)' },
  logit_bias: { off: (v) => isOff(v) || isEmptyObject(v), why: '' },
  tool_choice: {
    off: (v) => isOff(v) || v === 'auto' || v === 'none',
    why: ": only 'auto' and 'none' (a reply calls a tool when the model writes one)",
  },
  response_format: {
    off: (v) => isOff(v) || (typeof v === 'object' && (v as { type?: unknown }).type === 'text'),
    why: " (only {type: 'text'}): no constrained decoding",
  },
  functions: { off: isOff, why: ': use tools' },
  function_call: { off: isOff, why: ': use tools' },
  logprobs_format: { off: isOff, why: '' },
  modalities: {
    off: (v) => isOff(v) || (Array.isArray(v) && v.length === 1 && v[0] === 'text'),
    why: " (only ['text'])",
  },
  audio: { off: isOff, why: '' },
  prediction: { off: isOff, why: '' },
  reasoning_effort: { off: isOff, why: '' },
  web_search_options: { off: isOff, why: '' },
  service_tier: { off: (v) => isOff(v) || v === 'auto' || v === 'default', why: '' },
  store: { off: (v) => isOff(v) || v === false, why: '' },
  metadata: { off: (v) => isOff(v) || isEmptyObject(v), why: '' },
}

/** HTTP 400 for a parameter the server does not do. */
function notSupported(param: string, why = ''): ApiError {
  return new ApiError(
    400,
    `\`${param}\` is not supported${why}`,
    ApiErrorType.InvalidRequest,
    param,
    'unsupported_parameter',
  )
}

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
  const fields: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(body)) {
    const rule = UNSUPPORTED[k]
    if (!rule) fields[k] = v
    else if (!rule.off(v)) throw notSupported(k, rule.why)
    else if (k === 'tool_choice') fields[k] = v
  }
  const r = RequestSchema.safeParse(fields)
  if (!r.success) {
    const issue = r.error.issues[0]!
    const param = paramOf(issue.path)
    if (issue.code === 'unrecognized_keys')
      throw notSupported(param ? `${param}.${issue.keys[0]}` : issue.keys[0]!)
    if (/^tools\[\d+\]\.function\.strict$/.test(param))
      throw notSupported(param, ' (only false): no constrained decoding')
    throw new ApiError(
      400,
      `\`${param || 'body'}\`: ${issue.message}`,
      ApiErrorType.InvalidRequest,
      param || null,
      'invalid_value',
    )
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
