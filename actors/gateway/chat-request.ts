import { z } from 'zod'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { GatewayHttpError } from './errors.ts'

/**
 * The body of the gateway's `POST /v1/chat/completions`: OpenAI's chat-completions request,
 * restricted to what a training run can honour. Sampling is the run's (`pipeline.temperature`,
 * `pipeline.top_p`: the behavior policy the learner's importance ratios are taken against), so a
 * different `temperature` or `top_p` is refused, as are `n` above 1, `stop`, non-zero penalties
 * and a forced `tool_choice`: each with HTTP 400 naming the parameter and saying "not supported".
 * Messages may carry the extra fields OpenAI's clients put on a returned assistant message
 * (`refusal`, `annotations`), which are dropped.
 */

/** Message content: a string, or OpenAI's list of text parts (joined). */
const Content = z.union([
  z.string(),
  z
    .array(z.object({ type: z.literal('text'), text: z.string() }))
    .transform((parts) => parts.map((p) => p.text).join('')),
])

const ToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
})

const Message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: Content }),
  z.object({ role: z.literal('developer'), content: Content }),
  z.object({ role: z.literal('user'), content: Content }),
  z.object({
    role: z.literal('assistant'),
    content: Content.nullish(),
    tool_calls: z.array(ToolCall).nullish(),
  }),
  z.object({ role: z.literal('tool'), content: Content, tool_call_id: z.string() }),
])

const Tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
})

const RequestSchema = z.object({
  model: z.string(),
  messages: z.array(Message).min(1),
  tools: z.array(Tool).nullish(),
  tool_choice: z.unknown().optional(),
  parallel_tool_calls: z.boolean().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  max_tokens: z.int().min(1).nullish(),
  max_completion_tokens: z.int().min(1).nullish(),
  seed: z.int().nullish(),
  n: z.unknown().optional(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.unknown().optional(),
  stop: z.unknown().optional(),
  frequency_penalty: z.unknown().optional(),
  presence_penalty: z.unknown().optional(),
  user: z.string().optional(),
  metadata: z.unknown().optional(),
  store: z.unknown().optional(),
})

/** The run's sampling, which a request may restate but not change. */
export interface RunSampling {
  temperature: number
  top_p: number
}

/** A validated request of an agent. */
export interface GatewayChatRequest {
  model: string
  /** The conversation as triad's chat messages (`developer` taken as `system`). */
  messages: ChatMessage[]
  /** Tools offered to the model (empty: none, also for `tool_choice: "none"`). */
  tools: ToolSchema[]
  /** Most tokens to generate (`max_completion_tokens`, else `max_tokens`); undefined: the task's bound. */
  maxTokens: number | undefined
  stream: boolean
  /** With `stream`: a last chunk with `usage`. */
  includeUsage: boolean
  /** Return each sampled token's log-probability. */
  logprobs: boolean
}

const refuse = (param: string, why: string) =>
  new GatewayHttpError(400, 'unsupported_parameter', `${param} ${why}`, param)

/**
 * Checks a request body against OpenAI's schema and what the run supports.
 * @throws GatewayHttpError (400) naming the first bad field as `param`.
 */
export function parseGatewayRequest(body: unknown, sampling: RunSampling): GatewayChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new GatewayHttpError(400, 'invalid_request', 'the request body must be a JSON object')
  const r = RequestSchema.safeParse(body)
  if (!r.success) {
    const issue = r.error.issues[0]!
    const param = issue.path
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
      .join('')
      .replace(/^\./, '')
    throw new GatewayHttpError(400, 'invalid_value', `${param || 'body'}: ${issue.message}`, param || null)
  }
  const q = r.data
  const b = body as Record<string, unknown>
  if (q.temperature != null && q.temperature !== sampling.temperature)
    throw refuse(
      'temperature',
      `${q.temperature} is not supported: the run samples at ${sampling.temperature} (pipeline.temperature), the behavior policy its learner trains against`,
    )
  if (q.top_p != null && q.top_p !== sampling.top_p)
    throw refuse(
      'top_p',
      `${q.top_p} is not supported: the run samples with top_p ${sampling.top_p} (pipeline.top_p)`,
    )
  if (q.n != null && q.n !== 1)
    throw refuse('n', 'above 1 is not supported: one call is one turn of the episode')
  if (b.stop != null) throw refuse('stop', "is not supported: a turn ends on the chat template's end of turn")
  for (const k of ['frequency_penalty', 'presence_penalty'] as const)
    if (b[k] != null && b[k] !== 0) throw refuse(k, 'other than 0 is not supported')
  if (b.top_logprobs != null && b.top_logprobs !== 0) throw refuse('top_logprobs', 'is not supported')
  if (q.tool_choice != null && q.tool_choice !== 'auto' && q.tool_choice !== 'none')
    throw refuse(
      'tool_choice',
      'other than "auto" or "none" is not supported: the policy decides whether to call a tool',
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
          ? {
              role: 'assistant',
              content: m.content ?? null,
              tool_calls: m.tool_calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.function.name, arguments: c.function.arguments },
              })),
            }
          : { role: 'assistant', content: m.content ?? null }
      default:
        return { role: 'tool', content: m.content, tool_call_id: m.tool_call_id }
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
    maxTokens: q.max_completion_tokens ?? q.max_tokens ?? undefined,
    stream: q.stream ?? false,
    includeUsage: q.stream_options?.include_usage ?? false,
    logprobs: q.logprobs ?? false,
  }
}
