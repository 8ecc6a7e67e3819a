import { asChatFormat, type ChatFormat, type ContinuousBatcher, type Tokenizer } from '../../gpu/index.ts'
import type { AssistantMessage, ChatMessage, ToolSchema } from '../../protocols/index.ts'
import type { Policy } from '../environment/index.ts'
import { episodeSeeds } from '../runtime/index.ts'

/** Sampling settings of a model policy. */
export interface ModelPolicySettings {
  maxNewTokens: number
  temperature: number
  top_p: number
  /** Seed of this policy's samples (each turn adds its index). */
  seed: number
}

/**
 * The trained model as an environment `Policy`: renders the conversation with the chat template
 * (each turn anew, as inference with a Hugging Face template does; training appends instead),
 * samples one turn through a shared continuous batcher (so many episodes share forward passes),
 * and parses its tool calls. A turn that does not parse is sent as plain content, which the
 * environment answers with `invalid_action` the way it does in training.
 */
export class ModelPolicy implements Policy {
  private turn = 0
  private readonly chat: ChatFormat
  /** @param tokenizer triad's tokenizer (ChatML template) or a pretrained model's `ChatFormat`. */
  constructor(
    private readonly batcher: ContinuousBatcher,
    tokenizer: Tokenizer | ChatFormat,
    private readonly contextLength: number,
    private readonly settings: ModelPolicySettings,
  ) {
    this.chat = asChatFormat(tokenizer)
  }

  async act(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Promise<AssistantMessage> {
    const conversation = this.chat.render(messages, tools)
    const header = this.chat.generationPrompt()
    const prompt = new Int32Array(conversation.length + header.length)
    prompt.set(conversation)
    prompt.set(header, conversation.length)
    const room = this.contextLength - prompt.length
    if (room < 1) return { role: 'assistant', content: '' }
    const out = await this.batcher.submit(prompt, {
      maxNewTokens: Math.min(this.settings.maxNewTokens, room),
      temperature: this.settings.temperature,
      top_p: this.settings.top_p,
      stopTokens: [...this.chat.stopTokens],
      seed: episodeSeeds.evaluationTurn(this.settings.seed, this.turn++),
    })
    const parsed = this.chat.parseTurn(out.tokens)
    return parsed.ok ? parsed.message : { role: 'assistant', content: parsed.text }
  }
}
