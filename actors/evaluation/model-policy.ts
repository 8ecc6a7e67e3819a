import { type ContinuousBatcher, parseAssistant, renderPrompt, type Tokenizer } from '../../gpu/index.ts'
import type { AssistantMessage, ChatMessage, ToolSchema } from '../../protocols/index.ts'
import type { Policy } from '../environment/index.ts'

/** Sampling settings of a model policy. */
export interface ModelPolicySettings {
  maxNewTokens: number
  temperature: number
  topP: number
  /** Seed of this policy's samples (each turn adds its index). */
  seed: number
}

/**
 * The trained model as an environment `Policy`: renders the conversation with the chat template,
 * samples one turn through a shared continuous batcher (so many episodes share forward passes),
 * and parses its tool calls. A turn that does not parse is sent as plain content, which the
 * environment answers with `invalid_action` the way it does in training.
 */
export class ModelPolicy implements Policy {
  private turn = 0
  constructor(
    private readonly batcher: ContinuousBatcher,
    private readonly tokenizer: Tokenizer,
    private readonly contextLength: number,
    private readonly settings: ModelPolicySettings,
  ) {}

  async act(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): Promise<AssistantMessage> {
    const prompt = renderPrompt(this.tokenizer, messages, { tools })
    const room = this.contextLength - prompt.length
    if (room < 1) return { role: 'assistant', content: '' }
    const out = await this.batcher.submit(prompt, {
      maxNewTokens: Math.min(this.settings.maxNewTokens, room),
      temperature: this.settings.temperature,
      topP: this.settings.topP,
      stopTokens: [this.tokenizer.imEndId],
      seed: (this.settings.seed * 997 + this.turn++) | 0,
    })
    const text = this.tokenizer.decode(out.tokens)
    const parsed = parseAssistant(text)
    return parsed.ok ? parsed.message : { role: 'assistant', content: text.replace('<|im_end|>', '') }
  }
}
