import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Template } from '@huggingface/jinja'
import type { ChatMessage, ToolSchema } from '../protocols/index.ts'
import { type ChatFormat, ChatFormatKind, type ParsedTurn } from './chat-format.ts'
import { parseAssistant, type RenderedChat } from './chat-template.ts'
import { CheckpointError, TemplateError } from './errors.ts'
import { loadPretrainedTokenizer, type PretrainedTokenizer, tokenContent } from './pretrained-tokenizer.ts'
import { splitThink } from './think-block.ts'

/**
 * `ChatFormat` of a pretrained model: its own tokenizer (`PretrainedTokenizer`) and the Jinja
 * `chat_template` of its `tokenizer_config.json`, rendered by `@huggingface/jinja` with `messages`,
 * `tools` (the full OpenAI schemas), `add_generation_prompt`, `bos_token`, `eos_token` and any
 * extra variables (`enable_thinking`), as Hugging Face `apply_chat_template` does. Assistant tool
 * calls are passed with `arguments` as an object (the `transformers` convention), so a Qwen model
 * sees its native `<tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>` and a Llama model
 * its own format; its output is read back with the Hermes `<tool_call>` JSON convention after an
 * optional `<think>` block (`splitThink`, `parseAssistant`).
 *
 * Templates need not be append-only (Qwen3 drops or reformats earlier turns' reasoning once later
 * turns exist), so no result here is a re-rendering of a history that already has sampled ids:
 *
 * - `continuation(history, added)` renders `history` and `history + added` (no generation prompt)
 *   and takes the text after the k-th end-of-turn string of the second, k being the count of
 *   end-of-turn strings in the first, and after the text the template writes after a turn's end.
 *   It is exact when (a) the template writes the end-of-turn string once per turn (ChatML's
 *   `<|im_end|>`, Llama 3's `<|eot_id|>`), (b) how earlier turns are rendered changes only inside
 *   turns (reasoning dropped, whitespace), not their number, and (c) the added messages render the
 *   same whatever the history's contents, given its roles (Qwen3 reads the previous and next roles
 *   to group tool results into one user turn). The history must end with the assistant turn just
 *   generated (closed by the end-of-turn string whatever follows); otherwise TemplateError.
 * - The generation prompt is the difference between rendering one user message with and without
 *   `add_generation_prompt`, found once; templates whose prompt depends on the conversation are not
 *   covered.
 * - `renderChat` (a demonstration for SFT) renders the whole conversation once and finds each
 *   assistant turn the same way (end-of-turn count of the conversation before it).
 */
export class JinjaChatFormat implements ChatFormat {
  readonly kind = ChatFormatKind.Jinja
  readonly vocabSize: number
  readonly stopTokens: readonly number[]
  readonly maxCloseLength: number
  /** The end-of-turn string (`<|im_end|>` for Qwen). */
  readonly endOfTurn: string
  /** Its id. */
  readonly endOfTurnId: number
  private readonly template: Template
  private readonly generationText: string
  private readonly afterTurnText: string
  private readonly generationIds: Int32Array
  private readonly afterTurnIds: Int32Array

  /**
   * @param source the Jinja template text.
   * @param options.variables extra template variables (`{enable_thinking: false}`).
   * @param options.endOfTurn the string that ends every turn; default the config's `eos_token`.
   * @param options.stopTokens ids that end generation; default the end-of-turn id alone.
   * @throws TemplateError when the template does not parse or render, or has no end-of-turn token;
   *   CheckpointError when the end-of-turn string is not a token of the vocabulary.
   */
  constructor(
    /** The tokenizer. */
    readonly tokenizer: PretrainedTokenizer,
    source: string,
    private readonly options: {
      variables?: Readonly<Record<string, unknown>>
      endOfTurn?: string
      stopTokens?: readonly number[]
    } = {},
  ) {
    try {
      this.template = new Template(source)
    } catch (err) {
      throw new TemplateError(`chat_template of ${tokenizer.dir}: ${(err as Error).message}`, { cause: err })
    }
    const eos = options.endOfTurn ?? tokenContent(tokenizer.config.eos_token)
    if (eos === undefined)
      throw new TemplateError(
        `${join(tokenizer.dir, 'tokenizer_config.json')}: no eos_token to end a turn; give endOfTurn`,
      )
    const eosId = tokenizer.tokenId(eos)
    if (eosId === undefined)
      throw new CheckpointError(
        join(tokenizer.dir, 'tokenizer.json'),
        `end-of-turn ${JSON.stringify(eos)} is not a token`,
      )
    this.endOfTurn = eos
    this.endOfTurnId = eosId
    this.vocabSize = tokenizer.vocabSize
    this.stopTokens = options.stopTokens ?? [eosId]
    const probe: ChatMessage[] = [{ role: 'user', content: 'x' }]
    const bare = this.text(probe, [], false)
    const open = this.text(probe, [], true)
    if (!open.startsWith(bare))
      throw new TemplateError(`chat_template of ${tokenizer.dir}: the generation prompt is not a suffix`)
    this.generationText = open.slice(bare.length)
    const turn = this.text([...probe, { role: 'assistant', content: 'y' }], [], false)
    const last = turn.lastIndexOf(eos)
    if (last < 0)
      throw new TemplateError(`chat_template of ${tokenizer.dir}: an assistant turn does not end in ${eos}`)
    this.afterTurnText = turn.slice(last + eos.length)
    this.generationIds = tokenizer.encode(this.generationText)
    this.afterTurnIds = tokenizer.encode(this.afterTurnText)
    this.maxCloseLength = 1 + this.afterTurnIds.length
  }

  /**
   * The template's text for a conversation, as `apply_chat_template(tokenize=False)` gives it.
   * @throws TemplateError when the template fails on these messages.
   */
  text(messages: readonly ChatMessage[], tools: readonly ToolSchema[], addGenerationPrompt: boolean): string {
    try {
      return this.template.render({
        ...this.options.variables,
        messages: messages.map(templateMessage),
        ...(tools.length > 0 ? { tools } : {}),
        add_generation_prompt: addGenerationPrompt,
        bos_token: tokenContent(this.tokenizer.config.bos_token) ?? '',
        eos_token: tokenContent(this.tokenizer.config.eos_token) ?? '',
      })
    } catch (err) {
      throw new TemplateError(`chat_template of ${this.tokenizer.dir}: ${(err as Error).message}`, {
        cause: err,
      })
    }
  }

  encode(text: string): Int32Array {
    return this.tokenizer.encode(text)
  }

  decode(ids: ArrayLike<number>): string {
    return this.tokenizer.decode(ids)
  }

  render(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Int32Array {
    return this.tokenizer.encode(this.text(messages, tools, false))
  }

  generationPrompt(): Int32Array {
    return this.generationIds.slice()
  }

  closeTurn(sampled: ArrayLike<number>): Int32Array {
    const lastId = sampled.length > 0 ? sampled[sampled.length - 1]! : -1
    const cut = !this.stopTokens.includes(lastId)
    const out = new Int32Array((cut ? 1 : 0) + this.afterTurnIds.length)
    if (cut) out[0] = this.endOfTurnId
    out.set(this.afterTurnIds, cut ? 1 : 0)
    return out
  }

  continuation(
    history: readonly ChatMessage[],
    added: readonly ChatMessage[],
    tools: readonly ToolSchema[],
  ): Int32Array {
    if (added.length === 0) return new Int32Array(0)
    const before = this.text(history, tools, false)
    const k = countOf(before, this.endOfTurn)
    // Only an assistant turn is closed whatever follows it (Qwen3 leaves a tool result open when
    // another tool result follows).
    if (
      history[history.length - 1]?.role !== 'assistant' ||
      k === 0 ||
      before.slice(before.lastIndexOf(this.endOfTurn) + this.endOfTurn.length) !== this.afterTurnText
    )
      throw new TemplateError(
        `chat_template of ${this.tokenizer.dir}: the history must end with the assistant turn just generated, closed by ${this.endOfTurn}`,
      )
    const all = this.text([...history, ...added], tools, false)
    const at = nthIndexOf(all, this.endOfTurn, k)
    const start = at + this.endOfTurn.length
    if (at < 0 || !all.startsWith(this.afterTurnText, start))
      throw new TemplateError(
        `chat_template of ${this.tokenizer.dir}: the added messages change the history's turns; cannot append them`,
      )
    return this.tokenizer.encode(all.slice(start + this.afterTurnText.length))
  }

  parseTurn(sampled: ArrayLike<number>): ParsedTurn {
    let n = sampled.length
    if (n > 0 && this.stopTokens.includes(sampled[n - 1]!)) n--
    const text = this.tokenizer.decode(Array.prototype.slice.call(sampled, 0, n) as number[])
    const split = splitThink(text)
    if (!split.ok) return { ok: false, error: split.error, text, reasoning: null }
    const parsed = parseAssistant(split.answer)
    if (!parsed.ok) return { ...parsed, text, reasoning: split.reasoning }
    const message = parsed.message
    if (message.tool_calls?.length) {
      const content = message.content?.trim() ?? ''
      return {
        ok: true,
        message: { ...message, content: content === '' ? null : content },
        text,
        reasoning: split.reasoning,
      }
    }
    return { ...parsed, text, reasoning: split.reasoning }
  }

  renderChat(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): RenderedChat {
    const all = this.text(messages, tools, false)
    const ids: number[] = []
    const mask: number[] = []
    const push = (segment: string, m: number) => {
      for (const id of this.tokenizer.encode(segment)) {
        ids.push(id)
        mask.push(m)
      }
    }
    let done = 0
    messages.forEach((message, i) => {
      if (message.role !== 'assistant') return
      const before = i === 0 ? '' : this.text(messages.slice(0, i), tools, false)
      const k = countOf(before, this.endOfTurn)
      let start = 0
      if (k > 0) {
        const at = nthIndexOf(all, this.endOfTurn, k)
        start = at + this.endOfTurn.length
        if (all.startsWith(this.afterTurnText, start)) start += this.afterTurnText.length
      }
      // The turn's opening as the engine would see it (the generation prompt, or as much of it as
      // the template writes for this turn) is context; the rest up to the end of turn is learned.
      start += commonPrefixLength(this.generationText, all.slice(start, start + this.generationText.length))
      const end = nthIndexOf(all, this.endOfTurn, k + 1)
      if (end < 0)
        throw new TemplateError(`message ${i}: the template did not end this assistant turn`, {
          messageIndex: i,
        })
      push(all.slice(done, start), 0)
      push(all.slice(start, end + this.endOfTurn.length), 1)
      done = end + this.endOfTurn.length
    })
    push(all.slice(done), 0)
    return { ids: Int32Array.from(ids), lossMask: Uint8Array.from(mask) }
  }
}

/** A message as chat templates expect it: content never null, tool-call arguments as objects. */
function templateMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role !== 'assistant') return { ...message }
  const out: Record<string, unknown> = { role: 'assistant', content: message.content ?? '' }
  if (message.tool_calls?.length)
    out.tool_calls = message.tool_calls.map((call) => ({
      id: call.id,
      type: call.type,
      function: { name: call.function.name, arguments: argumentsOf(call.function.arguments) },
    }))
  return out
}

function argumentsOf(json: string): unknown {
  try {
    return JSON.parse(json)
  } catch {
    return json
  }
}

function countOf(text: string, needle: string): number {
  let n = 0
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) n++
  return n
}

/** Index of the n-th (1-based) occurrence of `needle`, or -1. */
function nthIndexOf(text: string, needle: string, n: number): number {
  let at = -1
  for (let i = 0; i < n; i++) {
    at = text.indexOf(needle, at < 0 ? 0 : at + needle.length)
    if (at < 0) return -1
  }
  return at
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  return i
}

/**
 * The chat format of a Hugging Face model directory: `tokenizer.json`, and the `chat_template` of
 * `tokenizer_config.json` (or of `chat_template.jinja` beside it, where newer models keep it; a
 * list of named templates uses the one named `default`).
 * @param options as `JinjaChatFormat`.
 * @throws CheckpointError when a file is missing or malformed, or the tokenizer has no chat template
 *   (one line naming tokenizer_config.json); TemplateError when the template is unusable.
 */
export function loadJinjaChatFormat(
  dir: string,
  options: ConstructorParameters<typeof JinjaChatFormat>[2] = {},
): JinjaChatFormat {
  const tokenizer = loadPretrainedTokenizer(dir)
  return new JinjaChatFormat(tokenizer, chatTemplateSource(tokenizer), options)
}

function chatTemplateSource(tokenizer: PretrainedTokenizer): string {
  const configFile = join(tokenizer.dir, 'tokenizer_config.json')
  const field = tokenizer.config.chat_template
  if (typeof field === 'string' && field !== '') return field
  if (Array.isArray(field)) {
    const named = field.find((t) => t?.name === 'default')
    if (named && typeof named.template === 'string') return named.template
    throw new CheckpointError(configFile, 'chat_template is a list without a "default" template')
  }
  const jinjaFile = join(tokenizer.dir, 'chat_template.jinja')
  if (field === undefined && existsSync(jinjaFile)) return readFileSync(jinjaFile, 'utf8')
  throw new CheckpointError(
    configFile,
    'has no chat_template (the tokenizer of a base model?); a chat model is needed',
  )
}
