import {
  type ChatFormat,
  ConfigError,
  createRng,
  createTransformer,
  disposeTransformer,
  fullLoraConfig,
  getWeights,
  initAdapters,
  type LoraConfig,
  lastTokenLogits,
  pick,
  setWeights,
  Tokenizer,
  type Transformer,
  type TransformerConfig,
  type VerdictTokens,
  withAdapters,
} from '../../gpu/index.ts'
import type { JudgeStep } from '../../protocols/index.ts'
import {
  type JudgeFormat,
  type JudgePromptOptions,
  renderJudgePrompt,
  verdictOf,
  verdictTokensOf,
} from './judge-prompt.ts'

/**
 * The reward model (RLAnything's generative step judge): a decoder-only transformer of the policy's
 * family with its own weights. It judges a step by sampling one verdict token after the judge prompt
 * (`renderJudgePrompt`): `+` is +1, `-` is -1, anything else unparseable (0). The m judgements of a
 * step are m draws from the same next-token distribution, so one forward pass over a batch of
 * prompts serves every judgement of every step.
 *
 * Two kinds: triad's own small model (`config`, every weight trained, triad's tokenizer), or a
 * pretrained model (`pretrained`): the policy's frozen base, shared and never copied, with the
 * reward model's own LoRA adapters, judging through the model's own tokenizer and chat template.
 * Either way `model.params` are what trains, what `getWeights` returns and what a
 * `reward.load_weights` carries (the adapters alone for a pretrained model).
 */

/**
 * A pretrained base a reward model puts its own LoRA adapters on (the rollout and learner
 * processes hold one per process, shared with the policy).
 */
export interface PretrainedJudgeBase {
  /** The Hugging Face directory the base was loaded from (recorded in checkpoints of the adapters). */
  dir: string
  /** The base model without adapters; it must outlive the reward model. */
  base: Transformer
  /** The model's own tokenizer and chat template. */
  chat: ChatFormat
  /** Rank, alpha, targets and dropout of the adapters. */
  lora: LoraConfig
}

/** Settings of a reward model. */
export interface RewardModelOptions {
  /** Model size of triad's own model; `vocabSize` must be the tokenizer's. Ignored with `pretrained`. */
  config?: TransformerConfig
  /**
   * A pretrained base: the reward model is its frozen weights plus its own LoRA adapters (B zero,
   * so it judges as the base does until trained), and renders prompts with the base's chat format.
   */
  pretrained?: PretrainedJudgeBase
  /** Seed of the initial weights (or adapters; ignored when `weights` are given); default 0. */
  seed?: number
  /** Initial weights by parameter name (the adapters with `pretrained`). */
  weights?: Record<string, Float32Array>
  /** Weight version of `weights`; default 0. */
  version?: number
  /** triad's tokenizer; default the byte tokenizer with the default special tokens. Ignored with `pretrained`. */
  tokenizer?: Tokenizer
  /** Sampling temperature of the verdicts (> 0); default 1. */
  temperature?: number
  /** How judge prompts are rendered (a shorter system line for small models). */
  prompt?: JudgePromptOptions
  /** Most padded tokens per forward pass when judging (default 4096). */
  maxPassTokens?: number
}

/** The judgements of a batch of steps; arrays are `[steps * m]`, step-major. */
export interface Judgements {
  m: number
  /** +1, -1, or 0 (unparseable). */
  judgements: Int8Array<ArrayBuffer>
  /** Log-probability of each sampled verdict token under the sampling distribution. */
  logprobs: Float32Array<ArrayBuffer>
  /** The sampled verdict token ids. */
  tokens: Int32Array<ArrayBuffer>
  /** The rendered judge prompt of each step, `[promptLen_j]` int32. */
  prompts: Int32Array[]
  /** Weight version that judged. */
  version: number
}

/** A reward model with its weights, chat format and sampling settings. */
export class RewardModel {
  readonly model: Transformer
  /** What renders its judge prompts: triad's tokenizer, or the pretrained model's `ChatFormat`. */
  readonly format: JudgeFormat
  /** Ids of its `+` and `-` verdicts in its vocabulary. */
  readonly verdicts: VerdictTokens
  readonly temperature: number
  readonly promptOptions: JudgePromptOptions
  /** Most padded tokens per forward pass when judging. */
  readonly maxPassTokens: number
  /** Weight version of the current weights. */
  version: number

  /**
   * @throws ConfigError when neither `config` nor `pretrained` is given, the vocabulary
   *   differs from the tokenizer's, a verdict is not one token of the vocabulary, or the temperature
   *   is not > 0; ShapeError on given weights of the wrong shape.
   */
  constructor(options: RewardModelOptions) {
    const p = options.pretrained
    this.format = p ? p.chat : (options.tokenizer ?? new Tokenizer())
    this.verdicts = verdictTokensOf(this.format)
    this.temperature = options.temperature ?? 1
    this.promptOptions = options.prompt ?? {}
    this.maxPassTokens = options.maxPassTokens ?? 4096
    if (!(Number.isInteger(this.maxPassTokens) && this.maxPassTokens > 0))
      throw new ConfigError('maxPassTokens', this.maxPassTokens, 'must be a positive integer')
    if (!(this.temperature > 0 && Number.isFinite(this.temperature)))
      throw new ConfigError('temperature', this.temperature, 'must be > 0')
    const seed = options.seed ?? 0
    if (p) {
      const lora = fullLoraConfig(p.lora)
      const adapters = options.weights ?? initAdapters(p.base.config, lora, seed)
      this.model = withAdapters(p.base, adapters, p.lora, { seed, base: p.dir })
    } else {
      if (!options.config)
        throw new ConfigError('config', undefined, "give triad's model size or a pretrained base")
      if (options.config.vocabSize !== this.format.vocabSize)
        throw new ConfigError(
          'vocabSize',
          options.config.vocabSize,
          `must be the tokenizer's ${this.format.vocabSize}`,
        )
      this.model = createTransformer(options.config, { seed, weights: options.weights })
    }
    this.version = options.version ?? 0
  }

  /** triad's own tokenizer (for `tokenizer.json` in checkpoints); undefined for a pretrained judge. */
  get tokenizer(): Tokenizer | undefined {
    return this.format instanceof Tokenizer ? this.format : undefined
  }

  /** Most tokens of a judge prompt (one position is left for the verdict). */
  get maxPromptTokens(): number {
    return this.model.config.contextLength - 1
  }

  /** Renders the judge prompt of each step. @throws JudgePromptTooLongError. */
  renderPrompts(steps: readonly JudgeStep[]): Int32Array[] {
    return steps.map((s, j) => renderJudgePrompt(this.format, s, this.maxPromptTokens, j, this.promptOptions))
  }

  /**
   * Next-token logits after each prompt, `[prompts]` rows of `[vocabSize]` float32, from left-padded
   * passes (padding masked out, positions counted from each prompt's first token) of at most
   * `passTokens` padded tokens each (`maxPassTokens`, default 4096: bounds the wasm heap).
   */
  lastLogits(prompts: readonly Int32Array[]): Promise<Float32Array[]> {
    return lastTokenLogits(this.model, prompts, this.maxPassTokens)
  }

  /**
   * Judges every step m times: one forward pass, then m seeded draws of the verdict token per step
   * at `temperature` (each with its log-probability under that distribution).
   * @throws JudgePromptTooLongError when a prompt cannot fit; ConfigError on a bad m.
   */
  async judge(steps: readonly JudgeStep[], m: number, seed: number): Promise<Judgements> {
    if (!Number.isInteger(m) || m < 1) throw new ConfigError('m', m, 'must be an integer >= 1')
    const prompts = this.renderPrompts(steps)
    const rows = await this.lastLogits(prompts)
    const rng = createRng(seed)
    const n = steps.length * m
    const out: Judgements = {
      m,
      judgements: new Int8Array(n),
      logprobs: new Float32Array(n),
      tokens: new Int32Array(n),
      prompts,
      version: this.version,
    }
    rows.forEach((row, j) => {
      for (let l = 0; l < m; l++) {
        const [token, logprob] = pick(row, this.temperature, 1, rng)
        out.tokens[j * m + l] = token
        out.logprobs[j * m + l] = logprob
        out.judgements[j * m + l] = verdictOf(token, this.verdicts)
      }
    })
    return out
  }

  /**
   * The greedy verdict (argmax over the whole vocabulary) after each prompt: +1, -1 or 0 when the
   * most likely token is neither `+` nor `-`. For measuring step accuracy.
   */
  async greedyVerdicts(prompts: readonly Int32Array[]): Promise<Int8Array> {
    const rows = await this.lastLogits(prompts)
    const rng = createRng(0)
    return Int8Array.from(rows.map((row) => verdictOf(pick(row, 0, 1, rng)[0], this.verdicts)))
  }

  /** Copies of the trained weights by parameter name (the adapters alone for a pretrained judge; for the object store / checkpoints). */
  getWeights(): Promise<Record<string, Float32Array<ArrayBuffer>>> {
    // Fresh copies, each on its own ArrayBuffer (what `reward.load_weights` carries).
    return getWeights(this.model) as Promise<Record<string, Float32Array<ArrayBuffer>>>
  }

  /** Replaces every weight and sets the version. @throws ShapeError on a missing, unknown or mis-sized weight. */
  loadWeights(weights: Readonly<Record<string, Float32Array>>, version: number): void {
    setWeights(this.model, weights)
    this.version = version
  }

  /** Frees its weights (a pretrained judge's adapters alone; the shared base stays). */
  dispose(): void {
    disposeTransformer(this.model)
  }
}
