import type { ChatMessage, ToolSchema } from '../protocols/index.ts'
import type { ParsedAssistant, RenderedChat } from './chat-template.ts'

/**
 * How a policy model's conversations become token ids and its generated ids become messages: the
 * one surface the agent loop (`actors/rollout/`) and the learner use, whichever tokenizer and
 * template sit behind it. Two implementations:
 * - `TriadChatFormat`: triad's own byte-level tokenizer (`tokenizer.ts`, `bpe.ts`) and ChatML
 *   template (`chat-template.ts`);
 * - `JinjaChatFormat`: a pretrained model's `tokenizer.json` (`PretrainedTokenizer`) and the Jinja
 *   `chat_template` of its `tokenizer_config.json`.
 *
 * Token-in-token-out: an episode's token sequence is built by appending, never by re-rendering the
 * history. `render(first messages)`, then per turn `generationPrompt`, the sampled ids as they came
 * from the engine, `closeTurn(sampled)`, and `continuation(history, new messages)`; so the ids the
 * learner trains on are exactly the ids the engine saw and sampled, also for templates that render
 * earlier turns differently once later turns exist (Qwen3 drops earlier turns' reasoning).
 */
export interface ChatFormat {
  /** Which implementation, for logs and run records. */
  readonly kind: ChatFormatKind
  /** Number of token ids the tokenizer produces; the model's vocabulary must be at least this. */
  readonly vocabSize: number
  /** Ids that end an assistant turn; generation stops on any of them (kept as the last token). */
  readonly stopTokens: readonly number[]
  /** Most ids `closeTurn` returns. */
  readonly maxCloseLength: number

  /** Text to ids `[n]` int32, as plain text of a message. */
  encode(text: string): Int32Array
  /** Ids to text, special tokens written out. */
  decode(ids: ArrayLike<number>): string

  /**
   * A conversation as tokens, without a generation prompt: the first context of an episode.
   * @returns ids `[n]` int32.
   * @throws TemplateError when a message cannot be rendered.
   */
  render(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Int32Array
  /** The ids that open an assistant turn (`<|im_start|>assistant\n`); generation starts after them. */
  generationPrompt(): Int32Array
  /**
   * The ids that follow a generated turn: the end-of-turn id when the engine stopped on the token
   * budget instead (`sampled` does not end in a stop token), then what the template writes after a
   * turn's end (`\n` in ChatML). At most `maxCloseLength` ids.
   */
  closeTurn(sampled: ArrayLike<number>): Int32Array
  /**
   * The ids of `added` messages (tool results, a user turn) following `history`, whose last message
   * is the assistant turn just closed: exactly what the template writes for them after that turn,
   * without a generation prompt. `history` is only read, never re-rendered into the result.
   * @throws TemplateError when a message cannot be rendered or the template's rendering of the added
   *   messages cannot be separated from the history (see the implementation).
   */
  continuation(
    history: readonly ChatMessage[],
    added: readonly ChatMessage[],
    tools: readonly ToolSchema[],
  ): Int32Array
  /**
   * A generated turn (`sampled` ids, the stop token included or not) as an assistant message. Never
   * throws: a malformed tool call is `{ok: false}` (the environment answers `invalid_action`).
   */
  parseTurn(sampled: ArrayLike<number>): ParsedTurn
  /**
   * A whole conversation (a demonstration for SFT) as ids with its loss mask: 1 on what the policy
   * emits in each assistant turn (its body and end-of-turn token), 0 elsewhere.
   * @throws TemplateError when a message cannot be rendered.
   */
  renderChat(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): RenderedChat
}

/** The implementations of `ChatFormat`. Closed set. */
export const ChatFormatKind = {
  /** triad's byte-level tokenizer and ChatML template. */
  Triad: 'triad',
  /** A pretrained tokenizer with its Jinja chat template. */
  Jinja: 'jinja',
} as const
export type ChatFormatKind = (typeof ChatFormatKind)[keyof typeof ChatFormatKind]

/**
 * A generated turn parsed: `text` is its decoded text without the stop token; `reasoning` the text
 * of its `<think>` block (null when it has none), which is not part of `message.content`.
 */
export type ParsedTurn = ParsedAssistant & { text: string; reasoning: string | null }
