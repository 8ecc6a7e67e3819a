import { type ChatFormat, ConfigError, renderPrompt, Tokenizer, type VerdictTokens } from '../../gpu/index.ts'
import type { ChatMessage, JudgeStep } from '../../protocols/index.ts'
import { JudgePromptTooLongError } from './errors.ts'

/**
 * The reward model's judge prompt, rendered with the judge's chat format (`JudgeFormat`): triad's
 * own ChatML template, as below, or a pretrained model's own Jinja template (the same messages,
 * then its generation prompt):
 *
 * ```text
 * <|im_start|>system\nJudge the last step of this <task> episode: + good, - bad.<|im_end|>\n
 * ...the episode's messages before the step (its system, user, assistant and tool turns)...
 * <|im_start|>assistant\n<the step><|im_end|>\n
 * ...the environment's messages that answered the step (`JudgeStep.result`), when present...
 * <|im_start|>assistant\n
 * ```
 *
 * (the last assistant turn is the judge's). The environment's step labels (`step_good`) say whether
 * a step's calls did what the task needed (a useful value, a query holding the answer, a move
 * towards the goal), which its answer shows (`error: ...`, `blocked`, `wrong`) and its text alone
 * does not: a judge that sees only the step must simulate the tool. The system line is `judgeSystem(task)` by default; small
 * models get a shorter one through `JudgePromptOptions.system` (every token costs on two CPU cores).
 *
 * The reward model answers with one token: `+` (byte 0x2B) means the step is good (`S = +1`), `-`
 * (byte 0x2D) means it is bad (`S = -1`); any other token is unparseable (`S = 0`, penalised).
 */

/**
 * What renders a judge prompt: triad's own `Tokenizer` (its ChatML template) or a pretrained model's
 * `ChatFormat` (its `tokenizer.json` and Jinja chat template), the same two the policy takes.
 */
export type JudgeFormat = Tokenizer | ChatFormat

/** Token id of the `+` verdict in triad's own tokenizer (its byte). */
export const GOOD_VERDICT_TOKEN = 0x2b
/** Token id of the `-` verdict in triad's own tokenizer (its byte). */
export const BAD_VERDICT_TOKEN = 0x2d
/** The verdict ids of triad's own tokenizer. */
export const TRIAD_VERDICT_TOKENS: Readonly<VerdictTokens> = Object.freeze({
  good: GOOD_VERDICT_TOKEN,
  bad: BAD_VERDICT_TOKEN,
})

/**
 * The ids of the verdicts `+` and `-` in a judge's vocabulary: each text encoded alone must be one
 * id (Qwen's byte-level BPE: `+` 10, `-` 12; triad's tokenizer: its bytes 0x2b, 0x2d). Reads the
 * format's `encode` alone.
 * @throws ConfigError when a verdict is not a single token of the vocabulary.
 */
export function verdictTokensOf(format: Pick<JudgeFormat, 'encode'>): VerdictTokens {
  const one = (text: string): number => {
    const ids = format.encode(text)
    if (ids.length !== 1)
      throw new ConfigError(
        'verdict',
        text,
        `must encode to one token of the judge's vocabulary (it encodes to ${ids.length}: [${Array.from(ids).join(', ')}])`,
      )
    return ids[0]!
  }
  return { good: one('+'), bad: one('-') }
}

/**
 * The judgement a sampled token stands for: +1 for the `+` id, -1 for the `-` id, 0 (unparseable)
 * for anything else.
 * @param verdicts the judge's verdict ids (`verdictTokensOf`); default triad's own tokenizer's.
 */
export function verdictOf(token: number, verdicts: VerdictTokens = TRIAD_VERDICT_TOKENS): -1 | 0 | 1 {
  if (token === verdicts.good) return 1
  if (token === verdicts.bad) return -1
  return 0
}

/** The judge's system line for a task. */
export function judgeSystem(task: string): string {
  return `Judge the last step of this ${task} episode: + good, - bad.`
}

/** Options of `renderJudgePrompt`. */
export interface JudgePromptOptions {
  /** The judge's system line for a task; default `judgeSystem`. */
  system?: (task: string) => string
}

function judgeMessages(
  step: JudgeStep,
  history: readonly ChatMessage[],
  options: JudgePromptOptions,
): ChatMessage[] {
  const system: ChatMessage = { role: 'system', content: (options.system ?? judgeSystem)(step.task) }
  return [system, ...history, step.step, ...(step.result ?? [])]
}

/**
 * The judge messages as prompt ids `[n]` int32: triad's template through `renderPrompt`; a
 * `ChatFormat` renders them without tool schemas (the judge calls no tool) and appends its
 * generation prompt.
 */
function renderMessages(format: JudgeFormat, messages: readonly ChatMessage[]): Int32Array {
  if (format instanceof Tokenizer) return renderPrompt(format, messages)
  const chat = format.render(messages, [])
  const header = format.generationPrompt()
  const ids = new Int32Array(chat.length + header.length)
  ids.set(chat)
  ids.set(header, chat.length)
  return ids
}

/**
 * Renders the judge prompt of one step; generation of the verdict starts right after it. When the
 * prompt does not fit `maxTokens`, the oldest history turns after the task statement (the messages
 * before the first assistant turn) are left out one by one.
 * @param maxTokens most prompt tokens (the model's context length minus one for the verdict).
 * @param stepIndex index of the step in its request, for the error.
 * @returns ids `[promptLen]` int32.
 * @throws JudgePromptTooLongError when even the shortest form does not fit; TemplateError when a
 *   pretrained template cannot render the messages.
 */
export function renderJudgePrompt(
  format: JudgeFormat,
  step: JudgeStep,
  maxTokens: number,
  stepIndex = 0,
  options: JudgePromptOptions = {},
): Int32Array {
  const firstAssistant = step.history.findIndex((m) => m.role === 'assistant')
  const head = firstAssistant < 0 ? step.history.length : firstAssistant
  const task = step.history.slice(0, head)
  let rest = step.history.slice(head)
  for (;;) {
    const ids = renderMessages(format, judgeMessages(step, [...task, ...rest], options))
    if (ids.length <= maxTokens) return ids
    if (rest.length === 0) throw new JudgePromptTooLongError(stepIndex, ids.length, maxTokens + 1)
    rest = rest.slice(1)
  }
}

/**
 * The steps of an episode to judge: one `JudgeStep` per assistant message, with every message
 * before it as its history and the environment's messages right after it (up to the next assistant
 * message: its tool results, or the user message answering a turn without a tool call) as its
 * result.
 * @param messages the whole conversation (first messages, then assistant and tool turns).
 * @returns `[turns]` steps in order.
 */
export function episodeJudgeSteps(task: string, messages: readonly ChatMessage[]): JudgeStep[] {
  const out: JudgeStep[] = []
  messages.forEach((m, i) => {
    if (m.role !== 'assistant') return
    let end = i + 1
    while (end < messages.length && messages[end]!.role !== 'assistant') end++
    out.push({ task, history: messages.slice(0, i), step: m, result: messages.slice(i + 1, end) })
  })
  return out
}
