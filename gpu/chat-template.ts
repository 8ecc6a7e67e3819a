import type { AssistantMessage, ChatMessage, ToolCall, ToolSchema } from '../protocols/index.ts'
import { TemplateError } from './errors.ts'
import { SpecialToken, type Tokenizer } from './tokenizer.ts'

/**
 * ChatML-style chat template with Hermes tool calls (the convention of Qwen models and verl):
 *
 * ```text
 * <|im_start|>system\n{system}\n\n{tools}<|im_end|>\n
 * <|im_start|>user\n{content}<|im_end|>\n
 * <|im_start|>assistant\n{content}<tool_call>{"name":"f","arguments":{"x":1}}</tool_call><|im_end|>\n
 * <|im_start|>tool\n{content}<|im_end|>\n
 * ```
 *
 * `<|im_start|>`, `<|im_end|>`, `<tool_call>` and `</tool_call>` are single special tokens; message
 * text is encoded as plain bytes, so a message cannot inject a turn boundary. The loss mask is 1 on
 * the assistant's body and its `<|im_end|>` (what the policy must learn to emit) and 0 elsewhere,
 * including the assistant header and tool results.
 */

/** A rendered token sequence. */
export interface RenderedChat {
  /** Token ids `[seqLen]` int32. */
  ids: Int32Array
  /** Loss mask `[seqLen]` uint8: 1 on assistant body tokens and their end token, else 0. */
  lossMask: Uint8Array
}

/** How tool schemas are rendered into the system turn. */
export const ToolFormat = {
  /** One short line per tool, `name(arg: type, opt?: type): description`; for small models. */
  Compact: 'compact',
  /** The OpenAI schemas as JSON, one per line; for models that know that format. */
  Json: 'json',
} as const
export type ToolFormat = (typeof ToolFormat)[keyof typeof ToolFormat]

/** Options of `renderChat` and `renderPrompt`. */
export interface RenderOptions {
  /** Tool schemas, rendered at the end of the system turn (one is created when there is none). */
  tools?: readonly ToolSchema[]
  /** Default `compact`. */
  toolFormat?: ToolFormat
}

const HEADER_SEPARATOR = '\n'
const TURN_SEPARATOR = '\n'

type JsonSchema = Record<string, unknown>

function schemaType(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return 'any'
  const s = schema as JsonSchema
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join('|')
  if (Array.isArray(s.type)) return s.type.join('|')
  switch (s.type) {
    case 'array':
      return `${schemaType(s.items)}[]`
    case 'object': {
      const props = s.properties as Record<string, unknown> | undefined
      if (!props) return 'object'
      return `{${renderParams(s)}}`
    }
    case undefined:
      return 'any'
    default:
      return String(s.type)
  }
}

function renderParams(schema: JsonSchema): string {
  const props = (schema.properties ?? {}) as Record<string, unknown>
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : [])
  return Object.entries(props)
    .map(([name, sub]) => `${name}${required.has(name) ? '' : '?'}: ${schemaType(sub)}`)
    .join(', ')
}

/**
 * Tool schemas as text for the system turn. `compact` writes one line per tool,
 * `name(a: number, b?: string[]): description`, after one line on the call syntax.
 */
export function renderTools(tools: readonly ToolSchema[], format: ToolFormat = ToolFormat.Compact): string {
  const head = `# Tools\nCall: ${SpecialToken.ToolCallStart}{"name":..,"arguments":{..}}${SpecialToken.ToolCallEnd}`
  const lines =
    format === ToolFormat.Json
      ? tools.map((t) => JSON.stringify(t))
      : tools.map(
          (t) => `${t.function.name}(${renderParams(t.function.parameters)}): ${t.function.description}`,
        )
  return [head, ...lines].join('\n')
}

/**
 * The text of an assistant message's body: content, then each tool call as
 * `<tool_call>{"name":..,"arguments":{..}}</tool_call>` (compact JSON, arguments as an object).
 * @throws TemplateError when a tool call's `arguments` is not a JSON object string.
 */
export function assistantText(message: AssistantMessage): string {
  let text = message.content ?? ''
  for (const call of message.tool_calls ?? []) {
    let args: unknown
    try {
      args = JSON.parse(call.function.arguments)
    } catch (err) {
      throw new TemplateError(`tool call ${call.id}: arguments are not JSON: ${call.function.arguments}`, {
        cause: err,
      })
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw new TemplateError(`tool call ${call.id}: arguments must be a JSON object`)
    text += `${SpecialToken.ToolCallStart}${JSON.stringify({ name: call.function.name, arguments: args })}${SpecialToken.ToolCallEnd}`
  }
  return text
}

/**
 * One message as tokens, header through trailing separator, with its loss mask.
 * @throws TemplateError on an unknown role or bad tool-call arguments.
 */
export function renderMessage(tokenizer: Tokenizer, message: ChatMessage, index = 0): RenderedChat {
  const role = (message as { role: string }).role
  const ids: number[] = [tokenizer.imStartId]
  const mask: number[] = [0]
  const push = (part: Int32Array, m: number) => {
    for (const id of part) {
      ids.push(id)
      mask.push(m)
    }
  }
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    throw new TemplateError(`message ${index}: unknown role '${role}'`, { messageIndex: index })
  push(tokenizer.encode(role + HEADER_SEPARATOR), 0)
  if (message.role === 'assistant') {
    let body: string
    try {
      body = assistantText(message)
    } catch (err) {
      throw new TemplateError(`message ${index}: ${(err as Error).message}`, {
        messageIndex: index,
        cause: err,
      })
    }
    // Tool-call markers become special ids; the rest of the body is plain bytes.
    push(encodeBody(tokenizer, body, message), 1)
    ids.push(tokenizer.imEndId)
    mask.push(1)
  } else {
    if (typeof message.content !== 'string')
      throw new TemplateError(`message ${index}: ${role} content must be a string`, { messageIndex: index })
    push(tokenizer.encode(message.content), 0)
    ids.push(tokenizer.imEndId)
    mask.push(0)
  }
  push(tokenizer.encode(TURN_SEPARATOR), 0)
  return { ids: Int32Array.from(ids), lossMask: Uint8Array.from(mask) }
}

/** Encodes an assistant body: content bytes, then each tool call between its special marker ids. */
function encodeBody(tokenizer: Tokenizer, body: string, message: AssistantMessage): Int32Array {
  if (!message.tool_calls?.length) return tokenizer.encode(body)
  const out: number[] = [...tokenizer.encode(message.content ?? '')]
  for (const call of message.tool_calls) {
    const args = JSON.parse(call.function.arguments) as unknown // validated by assistantText
    out.push(tokenizer.toolCallStartId)
    out.push(...tokenizer.encode(JSON.stringify({ name: call.function.name, arguments: args })))
    out.push(tokenizer.toolCallEndId)
  }
  return Int32Array.from(out)
}

function withTools(messages: readonly ChatMessage[], options: RenderOptions): ChatMessage[] {
  const tools = options.tools ?? []
  if (tools.length === 0) return [...messages]
  const toolText = renderTools(tools, options.toolFormat)
  const first = messages[0]
  if (first?.role === 'system')
    return [{ role: 'system', content: `${first.content}\n\n${toolText}` }, ...messages.slice(1)]
  return [{ role: 'system', content: toolText }, ...messages]
}

function concat(parts: readonly RenderedChat[]): RenderedChat {
  const n = parts.reduce((s, p) => s + p.ids.length, 0)
  const ids = new Int32Array(n)
  const lossMask = new Uint8Array(n)
  let at = 0
  for (const p of parts) {
    ids.set(p.ids, at)
    lossMask.set(p.lossMask, at)
    at += p.ids.length
  }
  return { ids, lossMask }
}

/**
 * A whole conversation (a training trajectory) as tokens with its loss mask.
 * @returns ids `[seqLen]` int32 and lossMask `[seqLen]` uint8 (1 on assistant tokens only).
 * @throws TemplateError on an unknown role or bad tool-call arguments.
 */
export function renderChat(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: RenderOptions = {},
): RenderedChat {
  return concat(withTools(messages, options).map((m, i) => renderMessage(tokenizer, m, i)))
}

/** The assistant header `<|im_start|>assistant\n` as ids; generation starts after it. */
export function assistantHeader(tokenizer: Tokenizer): Int32Array {
  return Int32Array.from([tokenizer.imStartId, ...tokenizer.encode(`assistant${HEADER_SEPARATOR}`)])
}

/**
 * The prompt for generating the next assistant turn: the conversation followed by the assistant
 * header. Generate until `<|im_end|>` (`tokenizer.imEndId`), then `parseAssistant` the decoded text.
 * @returns ids `[promptLen]` int32.
 */
export function renderPrompt(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: RenderOptions = {},
): Int32Array {
  const chat = renderChat(tokenizer, messages, options)
  const header = assistantHeader(tokenizer)
  const ids = new Int32Array(chat.ids.length + header.length)
  ids.set(chat.ids)
  ids.set(header, chat.ids.length)
  return ids
}

/** Why an assistant text could not be parsed. Closed set. */
export const ParseErrorCode = {
  /** `<tool_call>` without a matching `</tool_call>`. */
  UnclosedToolCall: 'unclosed_tool_call',
  /** `</tool_call>` without an opening `<tool_call>`. */
  UnopenedToolCall: 'unopened_tool_call',
  /** The text inside a tool call is not JSON. */
  BadJson: 'bad_json',
  /** The JSON is not an object with `name` and optional `arguments` only. */
  BadShape: 'bad_shape',
  /** `name` is missing, empty or not a string. */
  MissingName: 'missing_name',
  /** `arguments` is present but not an object (nor a string holding one). */
  BadArguments: 'bad_arguments',
  /** Non-blank text between or after tool calls. */
  TextAfterToolCall: 'text_after_tool_call',
  /** A `<think>` without `</think>`, a second `<think>` block, or one after the answer began. */
  BadThink: 'bad_think',
} as const
export type ParseErrorCode = (typeof ParseErrorCode)[keyof typeof ParseErrorCode]

/** A parse failure, as a value: environments answer it with `invalid_action`. */
export interface AssistantParseError {
  code: ParseErrorCode
  /** A sentence for a person (and for the policy, if the environment shows it). */
  message: string
  /** Index of the offending tool call (0-based), when one is at fault. */
  toolCall?: number
}

/** Result of `parseAssistant`. */
export type ParsedAssistant =
  | { ok: true; message: AssistantMessage }
  | { ok: false; error: AssistantParseError }

/** Options of `parseAssistant`. */
export interface ParseOptions {
  /** Id of the i-th tool call; default `call_${i}`. */
  callId?: (index: number) => string
}

const OPEN = SpecialToken.ToolCallStart
const CLOSE = SpecialToken.ToolCallEnd

/**
 * Assistant text (the decoded tokens generated after the assistant header) to an OpenAI assistant
 * message. The text ends at the first `<|im_end|>` or `<eos>` if one is present. Content is the text
 * before the first `<tool_call>` (null when empty and there are tool calls); each tool call must be
 * `{"name": string, "arguments": object}` (`arguments` may be omitted, or be a string holding a JSON
 * object); only whitespace may follow or separate tool calls. Never throws: a malformed tool call is
 * `{ok: false, error}`.
 */
export function parseAssistant(text: string, options: ParseOptions = {}): ParsedAssistant {
  const callId = options.callId ?? ((i: number) => `call_${i}`)
  let end = text.length
  for (const stop of [SpecialToken.ImEnd, SpecialToken.Eos]) {
    const at = text.indexOf(stop)
    if (at >= 0 && at < end) end = at
  }
  const body = text.slice(0, end)
  const fail = (code: ParseErrorCode, message: string, toolCall?: number): ParsedAssistant => ({
    ok: false,
    error: toolCall === undefined ? { code, message } : { code, message, toolCall },
  })
  const first = body.indexOf(OPEN)
  const firstClose = body.indexOf(CLOSE)
  if (first < 0) {
    if (firstClose >= 0) return fail(ParseErrorCode.UnopenedToolCall, `'${CLOSE}' without '${OPEN}'`)
    return { ok: true, message: { role: 'assistant', content: body } }
  }
  if (firstClose >= 0 && firstClose < first)
    return fail(ParseErrorCode.UnopenedToolCall, `'${CLOSE}' without '${OPEN}'`)
  const content = body.slice(0, first)
  const calls: ToolCall[] = []
  let at = first
  while (at < body.length) {
    const open = body.indexOf(OPEN, at)
    const between = body.slice(at, open < 0 ? body.length : open)
    if (between.trim() !== '') {
      if (between.includes(CLOSE))
        return fail(ParseErrorCode.UnopenedToolCall, `'${CLOSE}' without '${OPEN}'`, calls.length)
      return fail(
        ParseErrorCode.TextAfterToolCall,
        `text after a tool call: ${JSON.stringify(between.trim())}`,
      )
    }
    if (open < 0) break
    const i = calls.length
    const close = body.indexOf(CLOSE, open + OPEN.length)
    const nextOpen = body.indexOf(OPEN, open + OPEN.length)
    if (close < 0 || (nextOpen >= 0 && nextOpen < close))
      return fail(ParseErrorCode.UnclosedToolCall, `tool call ${i}: '${OPEN}' without '${CLOSE}'`, i)
    const inner = body.slice(open + OPEN.length, close)
    let value: unknown
    try {
      value = JSON.parse(inner)
    } catch (err) {
      return fail(ParseErrorCode.BadJson, `tool call ${i}: not JSON (${(err as Error).message})`, i)
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return fail(ParseErrorCode.BadShape, `tool call ${i}: expected an object {"name", "arguments"}`, i)
    const obj = value as Record<string, unknown>
    const extra = Object.keys(obj).filter((k) => k !== 'name' && k !== 'arguments')
    if (extra.length)
      return fail(ParseErrorCode.BadShape, `tool call ${i}: unknown fields ${extra.join(', ')}`, i)
    if (typeof obj.name !== 'string' || obj.name === '')
      return fail(ParseErrorCode.MissingName, `tool call ${i}: "name" must be a non-empty string`, i)
    let args: unknown = 'arguments' in obj ? obj.arguments : {}
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args)
      } catch {
        return fail(ParseErrorCode.BadArguments, `tool call ${i}: "arguments" string is not JSON`, i)
      }
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      return fail(ParseErrorCode.BadArguments, `tool call ${i}: "arguments" must be an object`, i)
    calls.push({
      id: callId(i),
      type: 'function',
      function: { name: obj.name, arguments: JSON.stringify(args) },
    })
    at = close + CLOSE.length
  }
  return {
    ok: true,
    message: { role: 'assistant', content: content === '' ? null : content, tool_calls: calls },
  }
}
