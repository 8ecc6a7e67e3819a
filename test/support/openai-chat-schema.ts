import assert from 'node:assert/strict'
import type OpenAI from 'openai'
import { z } from 'zod'

/**
 * The OpenAI chat-completions shapes, written with zod from the OpenAI API reference (Chat
 * Completions: the request's `messages` and `tools`, the `chat.completion` object, the
 * `chat.completion.chunk` object, the error object), strict where the API is (an unknown field in
 * a message is refused by the API), plus the rules of a conversation the per-message shapes cannot
 * say. The inferred types are checked against the official `openai` package's types at compile time
 * (the `satisfies` lines), so a shape here cannot drift from the client's.
 */

const TextPart = z.strictObject({ type: z.literal('text'), text: z.string() })
const RefusalPart = z.strictObject({ type: z.literal('refusal'), refusal: z.string() })
const ImagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({ url: z.string(), detail: z.enum(['auto', 'low', 'high']).optional() }),
})

/** A tool call of an assistant message: `arguments` is a JSON string. */
const ToolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
})

/** `ChatCompletionMessageParam` (without the deprecated `function` role). */
export const OpenAiMessage = z.discriminatedUnion('role', [
  z.strictObject({
    role: z.literal('developer'),
    content: z.union([z.string(), z.array(TextPart)]),
    name: z.string().optional(),
  }),
  z.strictObject({
    role: z.literal('system'),
    content: z.union([z.string(), z.array(TextPart)]),
    name: z.string().optional(),
  }),
  z.strictObject({
    role: z.literal('user'),
    content: z.union([z.string(), z.array(z.union([TextPart, ImagePart]))]),
    name: z.string().optional(),
  }),
  z.strictObject({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.union([TextPart, RefusalPart]))]).nullish(),
    refusal: z.string().nullish(),
    name: z.string().optional(),
    tool_calls: z.array(ToolCall).min(1).optional(),
  }),
  z.strictObject({
    role: z.literal('tool'),
    content: z.union([z.string(), z.array(TextPart)]),
    tool_call_id: z.string().min(1),
  }),
])

/** `ChatCompletionFunctionTool`. */
export const OpenAiTool = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
})

const TopLogprob = z.strictObject({
  token: z.string(),
  logprob: z.number().max(0),
  bytes: z.array(z.int().min(0).max(255)).nullable(),
})
const TokenLogprob = TopLogprob.extend({ top_logprobs: z.array(TopLogprob) })
const Logprobs = z.strictObject({
  content: z.array(TokenLogprob).nullable(),
  refusal: z.array(TokenLogprob).nullable(),
})
const FinishReason = z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'function_call'])
const Usage = z.object({
  prompt_tokens: z.int().min(0),
  completion_tokens: z.int().min(0),
  total_tokens: z.int().min(0),
})

/** The `chat.completion` object. */
export const OpenAiCompletion = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.int(),
  model: z.string(),
  choices: z.array(
    z.strictObject({
      index: z.int().min(0),
      message: z.strictObject({
        role: z.literal('assistant'),
        content: z.string().nullable(),
        refusal: z.string().nullable(),
        tool_calls: z.array(ToolCall).min(1).optional(),
      }),
      logprobs: Logprobs.nullable(),
      finish_reason: FinishReason,
    }),
  ),
  usage: Usage.optional(),
  system_fingerprint: z.string().optional(),
})

/** The `chat.completion.chunk` object of a stream. */
export const OpenAiChunk = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.int(),
  model: z.string(),
  choices: z.array(
    z.strictObject({
      index: z.int().min(0),
      delta: z.strictObject({
        role: z.literal('assistant').optional(),
        content: z.string().nullish(),
        refusal: z.string().nullish(),
        tool_calls: z
          .array(
            z.strictObject({
              index: z.int().min(0),
              id: z.string().optional(),
              type: z.literal('function').optional(),
              function: z
                .strictObject({ name: z.string().optional(), arguments: z.string().optional() })
                .optional(),
            }),
          )
          .optional(),
      }),
      logprobs: Logprobs.nullish(),
      finish_reason: FinishReason.nullable(),
    }),
  ),
  usage: Usage.nullish(),
  system_fingerprint: z.string().optional(),
})

/** The error object of a refused request. */
export const OpenAiError = z.strictObject({
  error: z.strictObject({
    message: z.string().min(1),
    type: z.string().min(1),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
})

// Compile-time: what the schemas accept is what the official client's types describe.
;((m: z.infer<typeof OpenAiMessage>) => m) satisfies (m: never) => OpenAI.ChatCompletionMessageParam
;((t: z.infer<typeof OpenAiTool>) => t) satisfies (t: never) => OpenAI.ChatCompletionFunctionTool
;((c: z.infer<typeof OpenAiCompletion>) => c) satisfies (c: never) => OpenAI.ChatCompletion
;((c: z.infer<typeof OpenAiChunk>) => c) satisfies (c: never) => OpenAI.ChatCompletionChunk

/** Zod's first issue as one line, for assertion messages. */
function firstIssue(e: z.ZodError): string {
  const i = e.issues[0]!
  return `${i.path.join('.')}: ${i.message}`
}

/**
 * Asserts that `value` is a valid OpenAI conversation: `messages` by the message schema, `tools` by
 * the tool schema, and the rules across messages:
 * - a `tool` message follows (after other tool messages) an assistant message with `tool_calls`,
 *   and its `tool_call_id` is one of those calls, answered once;
 * - every tool call is answered before the next non-tool message;
 * - an assistant message has content or tool calls; the calls of one message have distinct ids;
 * - each call's `arguments` is a JSON string holding an object.
 * @param where names the conversation in the assertion's message.
 */
export function assertOpenAiConversation(messages: unknown, tools: unknown, where: string): void {
  const m = z.array(OpenAiMessage).min(1).safeParse(messages)
  assert.ok(m.success, `${where}: messages: ${m.success ? '' : firstIssue(m.error)}`)
  const t = z.array(OpenAiTool).safeParse(tools)
  assert.ok(t.success, `${where}: tools: ${t.success ? '' : firstIssue(t.error)}`)
  let open: Set<string> | undefined
  m.data.forEach((msg, i) => {
    const at = `${where}: messages[${i}]`
    if (msg.role === 'tool') {
      assert.ok(open, `${at}: a tool message without an assistant tool call before it`)
      assert.ok(
        open.delete(msg.tool_call_id),
        `${at}: tool_call_id '${msg.tool_call_id}' answers no open call`,
      )
      return
    }
    if (open) assert.equal(open.size, 0, `${at}: tool calls ${[...open].join(', ')} were not answered`)
    open = undefined
    if (msg.role !== 'assistant') return
    assert.ok(
      msg.content != null || msg.tool_calls,
      `${at}: an assistant message needs content or tool_calls`,
    )
    if (!msg.tool_calls) return
    const ids = msg.tool_calls.map((c) => c.id)
    assert.equal(new Set(ids).size, ids.length, `${at}: tool call ids repeat: ${ids.join(', ')}`)
    for (const c of msg.tool_calls) {
      let args: unknown
      assert.doesNotThrow(() => {
        args = JSON.parse(c.function.arguments)
      }, `${at}: arguments of ${c.id} are not JSON: ${c.function.arguments}`)
      assert.ok(
        typeof args === 'object' && args !== null && !Array.isArray(args),
        `${at}: arguments of ${c.id} are not a JSON object`,
      )
    }
    open = new Set(ids)
  })
}

/** Asserts a `chat.completion` reply: the schema, and `logprobs` as `assertTokenLogprobs` says. */
export function assertOpenAiCompletion(body: unknown, where: string): z.infer<typeof OpenAiCompletion> {
  const r = OpenAiCompletion.safeParse(body)
  assert.ok(r.success, `${where}: ${r.success ? '' : firstIssue(r.error)}`)
  for (const c of r.data.choices)
    if (c.logprobs?.content) assertTokenLogprobs(c.logprobs.content, `${where}: choices[${c.index}]`)
  return r.data
}

/** Asserts one stream chunk. */
export function assertOpenAiChunk(body: unknown, where: string): z.infer<typeof OpenAiChunk> {
  const r = OpenAiChunk.safeParse(body)
  assert.ok(r.success, `${where}: ${r.success ? '' : firstIssue(r.error)}`)
  for (const c of r.data.choices)
    if (c.logprobs?.content) assertTokenLogprobs(c.logprobs.content, `${where}: choices[${c.index}]`)
  return r.data
}

/** Asserts an error reply. */
export function assertOpenAiError(body: unknown, where: string): z.infer<typeof OpenAiError> {
  const r = OpenAiError.safeParse(body)
  assert.ok(r.success, `${where}: ${r.success ? '' : firstIssue(r.error)}`)
  return r.data
}

/**
 * Asserts logprob entries: each `bytes` present, `top_logprobs` with distinct tokens, most likely
 * first, and a `token` that is its bytes' text when they are valid UTF-8.
 */
export function assertTokenLogprobs(entries: readonly z.infer<typeof TokenLogprob>[], where: string): void {
  const strict = new TextDecoder('utf-8', { fatal: true })
  entries.forEach((e, i) => {
    const at = `${where}: logprobs[${i}]`
    for (const x of [e, ...e.top_logprobs]) {
      assert.ok(x.bytes, `${at}: no bytes`)
      let text: string | undefined
      try {
        text = strict.decode(Uint8Array.from(x.bytes))
      } catch {}
      if (text !== undefined) assert.equal(x.token, text, `${at}: token is not its bytes' text`)
    }
    const tokens = e.top_logprobs.map((x) => x.token)
    assert.equal(
      new Set(tokens).size,
      tokens.length,
      `${at}: top_logprobs repeat a token: ${tokens.join(' | ')}`,
    )
    for (let k = 1; k < e.top_logprobs.length; k++)
      assert.ok(
        e.top_logprobs[k - 1]!.logprob >= e.top_logprobs[k]!.logprob,
        `${at}: top_logprobs out of order`,
      )
  })
}
