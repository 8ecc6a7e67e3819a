import { z } from 'zod'
import type { AssistantMessage, ChatMessage, Millis, ToolCall, ToolSchema } from '../../protocols/index.ts'
import { describeError, oneLine } from './error-text.ts'
import { PolicyEndpointError } from './errors.ts'
import type { Policy } from './task.ts'

/**
 * A policy served by any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp
 * server, OpenAI, `triad serve`): the task's full OpenAI tool schemas go in `tools`, the reply's
 * assistant message (content and `tool_calls`) comes back as is. Plain `fetch`, no SDK.
 */

/** Settings of the client. */
export interface OpenAIPolicyOptions {
  /** Base URL (`http://host:8000/v1`) or the full `/chat/completions` URL. */
  url: string
  /** Model name sent in the request. */
  model: string
  /** Sent as `Authorization: Bearer ...` when set. */
  apiKey?: string
  /** Sampling temperature. Default 0. */
  temperature?: number
  /** Most tokens per reply. Default 512. */
  maxTokens?: number
  /** Deadline of one request. Default 60,000 ms. */
  timeoutMs?: Millis
  /** Sent as `seed` (each turn adds its index), for endpoints that sample reproducibly; absent: not sent. */
  seed?: number
}

/** The chat-completions URL for a base URL. */
export function chatCompletionsUrl(url: string): string {
  const u = url.replace(/\/+$/, '')
  return u.endsWith('/chat/completions') ? u : `${u}/chat/completions`
}

/**
 * The part of a chat-completions reply the policy reads: `choices[0].message`, an assistant
 * message whose content is text or null and whose tool calls name a function. `arguments` may be
 * text (OpenAI's shape) or an object (some servers); `id` and `type` may be missing.
 */
const ReplySchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          role: z.literal('assistant').optional(),
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().optional(),
                type: z.literal('function').optional(),
                function: z.object({
                  name: z.string(),
                  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
                }),
              }),
            )
            .nullable()
            .optional(),
        }),
      }),
    )
    .min(1),
})

/** `choices[0].message.tool_calls[1].function` from a zod issue path. */
function pathText(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`
  return out || 'the reply'
}

/** A policy behind an OpenAI-compatible endpoint. */
export class OpenAIPolicy implements Policy {
  /** The chat-completions URL requests go to. */
  readonly endpoint: string
  private turn = 0
  constructor(readonly options: OpenAIPolicyOptions) {
    this.endpoint = chatCompletionsUrl(options.url)
  }

  /**
   * Asks the endpoint for the next assistant message.
   * @throws PolicyEndpointError (one line: the URL and what answered) for a network failure, a
   *   time-out, a non-2xx status, a reply that is not JSON, or JSON without an assistant message
   *   in `choices[0].message` (the first wrong field named).
   */
  async act(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Promise<AssistantMessage> {
    const body = {
      model: this.options.model,
      messages,
      ...(tools.length ? { tools, tool_choice: 'auto' } : {}),
      temperature: this.options.temperature ?? 0,
      max_tokens: this.options.maxTokens ?? 512,
      ...(this.options.seed === undefined ? {} : { seed: this.options.seed + this.turn }),
    }
    this.turn++
    const timeoutMs = this.options.timeoutMs ?? 60_000
    let res: Response
    try {
      res = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      })
    } catch (e) {
      const why =
        e instanceof Error && e.name === 'TimeoutError'
          ? `no answer within ${timeoutMs} ms`
          : `request failed: ${describeError(e)}`
      throw new PolicyEndpointError(this.endpoint, oneLine(why), undefined, e)
    }
    let text: string
    try {
      text = await res.text()
    } catch (e) {
      throw new PolicyEndpointError(
        this.endpoint,
        oneLine(`HTTP ${res.status}, then the body failed: ${describeError(e)}`),
        res.status,
        e,
      )
    }
    if (!res.ok)
      throw new PolicyEndpointError(this.endpoint, oneLine(`HTTP ${res.status}: ${text}`), res.status)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (e) {
      throw new PolicyEndpointError(
        this.endpoint,
        oneLine(`HTTP ${res.status} with a reply that is not JSON: ${text || '(empty)'}`),
        res.status,
        e,
      )
    }
    const parsed = ReplySchema.safeParse(json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      throw new PolicyEndpointError(
        this.endpoint,
        oneLine(
          `HTTP ${res.status} with JSON that is not a chat completion (${pathText(issue.path)}: ${issue.message}): ${text}`,
        ),
        res.status,
      )
    }
    const m = parsed.data.choices[0]!.message
    const calls: ToolCall[] = (m.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      type: 'function',
      function: {
        name: c.function.name,
        arguments:
          typeof c.function.arguments === 'string'
            ? c.function.arguments
            : JSON.stringify(c.function.arguments ?? {}),
      },
    }))
    const content = m.content ?? null
    return calls.length ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content }
  }
}
