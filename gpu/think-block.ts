import { type AssistantParseError, ParseErrorCode } from './chat-template.ts'

/**
 * The reasoning block of a generated turn of a reasoning model (Qwen3, DeepSeek-R1 style):
 * `<think>\n{reasoning}\n</think>\n\n{answer}`. Qwen3 thinking models whose prompt already ends in
 * `<think>\n` generate only `{reasoning}\n</think>\n\n{answer}`; both forms are read.
 */

const OPEN = '<think>'
const CLOSE = '</think>'

/** A turn's text split into its reasoning and its answer. */
export type SplitThink =
  | {
      ok: true
      /** The reasoning without the markers and surrounding newlines; null when the turn has none. */
      reasoning: string | null
      /** The text after `</think>` (the whole text when there is no block), leading newlines removed. */
      answer: string
    }
  | { ok: false; error: AssistantParseError }

/**
 * Splits a generated turn at its `</think>`. The block may only come first (whitespace before it
 * aside); its `<think>` may be missing (it was in the prompt). Never throws.
 * @returns `{ok: false}` with `bad_think` for a `<think>` without `</think>`, or a second block.
 */
export function splitThink(text: string): SplitThink {
  const close = text.indexOf(CLOSE)
  const bad = (message: string): SplitThink => ({
    ok: false,
    error: { code: ParseErrorCode.BadThink, message },
  })
  if (close < 0) {
    if (text.includes(OPEN)) return bad(`'${OPEN}' without '${CLOSE}'`)
    return { ok: true, reasoning: null, answer: text }
  }
  let head = text.slice(0, close)
  const open = head.indexOf(OPEN)
  if (open >= 0) {
    if (head.slice(0, open).trim() !== '') return bad(`text before '${OPEN}'`)
    head = head.slice(open + OPEN.length)
  }
  if (head.includes(OPEN)) return bad(`a second '${OPEN}' inside the reasoning`)
  const answer = text.slice(close + CLOSE.length)
  if (answer.includes(OPEN) || answer.includes(CLOSE)) return bad(`a second '${OPEN}' block`)
  return { ok: true, reasoning: head.replace(/^\n+|\n+$/g, ''), answer: answer.replace(/^\n+/, '') }
}
