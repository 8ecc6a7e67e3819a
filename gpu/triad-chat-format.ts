import type { ChatMessage, ToolSchema } from '../protocols/index.ts'
import { type ChatFormat, ChatFormatKind, type ParsedTurn } from './chat-format.ts'
import {
  assistantHeader,
  parseAssistant,
  type RenderedChat,
  renderChat,
  renderMessage,
  type ToolFormat,
} from './chat-template.ts'
import { Tokenizer } from './tokenizer.ts'

/**
 * `ChatFormat` over triad's own byte-level `Tokenizer` and ChatML template (`chat-template.ts`).
 * Its template is append-only, so `continuation` is `renderMessage` of each added message; the ids
 * of an episode are the same as before `ChatFormat` existed.
 */
export class TriadChatFormat implements ChatFormat {
  readonly kind = ChatFormatKind.Triad
  readonly vocabSize: number
  readonly stopTokens: readonly number[]
  readonly maxCloseLength: number
  private readonly header: Int32Array
  private readonly newline: Int32Array

  /** @param options.toolFormat how tool schemas are written into the system turn (default compact). */
  constructor(
    /** The tokenizer. */
    readonly tokenizer: Tokenizer,
    private readonly options: { toolFormat?: ToolFormat } = {},
  ) {
    this.vocabSize = tokenizer.vocabSize
    this.stopTokens = [tokenizer.imEndId]
    this.header = assistantHeader(tokenizer)
    this.newline = tokenizer.encode('\n')
    this.maxCloseLength = 1 + this.newline.length
  }

  encode(text: string): Int32Array {
    return this.tokenizer.encode(text)
  }

  decode(ids: ArrayLike<number>): string {
    return this.tokenizer.decode(ids)
  }

  render(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Int32Array {
    return renderChat(this.tokenizer, messages, { tools, toolFormat: this.options.toolFormat }).ids
  }

  generationPrompt(): Int32Array {
    return this.header.slice()
  }

  closeTurn(sampled: ArrayLike<number>): Int32Array {
    const cut = sampled.length === 0 || sampled[sampled.length - 1] !== this.tokenizer.imEndId
    const out = new Int32Array((cut ? 1 : 0) + this.newline.length)
    if (cut) out[0] = this.tokenizer.imEndId
    out.set(this.newline, cut ? 1 : 0)
    return out
  }

  continuation(
    history: readonly ChatMessage[],
    added: readonly ChatMessage[],
    _tools: readonly ToolSchema[],
  ): Int32Array {
    const parts = added.map((m, i) => renderMessage(this.tokenizer, m, history.length + i).ids)
    const out = new Int32Array(parts.reduce((s, p) => s + p.length, 0))
    let at = 0
    for (const p of parts) {
      out.set(p, at)
      at += p.length
    }
    return out
  }

  parseTurn(sampled: ArrayLike<number>): ParsedTurn {
    const text = this.tokenizer.decode(sampled).replace('<|im_end|>', '')
    return { ...parseAssistant(text), text, reasoning: null }
  }

  renderChat(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): RenderedChat {
    return renderChat(this.tokenizer, messages, { tools, toolFormat: this.options.toolFormat })
  }
}

/**
 * The chat format of a policy given either way: a `ChatFormat` as is, triad's own `Tokenizer` as
 * `new TriadChatFormat(tokenizer)` (compact tool format).
 */
export function asChatFormat(format: Tokenizer | ChatFormat): ChatFormat {
  return format instanceof Tokenizer ? new TriadChatFormat(format) : format
}
