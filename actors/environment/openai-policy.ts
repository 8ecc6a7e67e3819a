import type { AssistantMessage, ChatMessage, Millis, ToolCall, ToolSchema } from '../../protocols/index.ts'
import { PolicyEndpointError } from './errors.ts'
import type { Policy } from './task.ts'

/**
 * A policy served by any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp
 * server, OpenAI): the task's full OpenAI tool schemas go in `tools`, the reply's assistant message
 * (content and `tool_calls`) comes back as is. Plain `fetch`, no SDK.
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
}

/** The chat-completions URL for a base URL. */
export function chatCompletionsUrl(url: string): string {
  const u = url.replace(/\/+$/, '')
  return u.endsWith('/chat/completions') ? u : `${u}/chat/completions`
}

/** A policy behind an OpenAI-compatible endpoint. */
export class OpenAIPolicy implements Policy {
  private readonly endpoint: string
  constructor(private readonly options: OpenAIPolicyOptions) {
    this.endpoint = chatCompletionsUrl(options.url)
  }

  /**
   * Asks the endpoint for the next assistant message.
   * @throws PolicyEndpointError for a network failure, a time-out, a non-2xx status, or a reply
   *   without an assistant message.
   */
  async act(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Promise<AssistantMessage> {
    const body = {
      model: this.options.model,
      messages,
      tools,
      tool_choice: 'auto',
      temperature: this.options.temperature ?? 0,
      max_tokens: this.options.maxTokens ?? 512,
    }
    let res: Response
    try {
      res = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
      })
    } catch (e) {
      throw new PolicyEndpointError(this.endpoint, `request failed: ${(e as Error).message}`, undefined, e)
    }
    const text = await res.text()
    if (!res.ok)
      throw new PolicyEndpointError(this.endpoint, `HTTP ${res.status}: ${text.slice(0, 300)}`, res.status)
    let json: { choices?: { message?: { content?: unknown; tool_calls?: unknown[] } }[] }
    try {
      json = JSON.parse(text)
    } catch (e) {
      throw new PolicyEndpointError(this.endpoint, `reply is not JSON: ${text.slice(0, 200)}`, res.status, e)
    }
    const m = json.choices?.[0]?.message
    if (!m)
      throw new PolicyEndpointError(
        this.endpoint,
        `reply has no choices[0].message: ${text.slice(0, 200)}`,
        res.status,
      )
    const calls: ToolCall[] = (m.tool_calls ?? []).map((c, i) => {
      const call = c as { id?: string; function?: { name?: string; arguments?: unknown } }
      const args = call.function?.arguments
      return {
        id: call.id ?? `call_${i}`,
        type: 'function',
        function: {
          name: call.function?.name ?? '',
          arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
        },
      }
    })
    const content = typeof m.content === 'string' ? m.content : null
    return calls.length ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content }
  }
}
