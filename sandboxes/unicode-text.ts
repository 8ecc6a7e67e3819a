import { isUtf8 } from 'node:buffer'
import { SandboxRequestError } from './errors.ts'

/**
 * Checks that `text` is well-formed Unicode: no lone UTF-16 surrogate, which UTF-8 cannot encode
 * (JSON's `\ud800` escape makes one; so does `utf8BodyText` for a body byte that is not UTF-8).
 * The sandbox writes code, file names and stdin as UTF-8, so such text is refused before it takes
 * a slot.
 * @param field how the refusal names the field (`code`, `stdin`, `files`, `fetch_files`).
 * @throws SandboxRequestError (HTTP 422) naming the field, the character's index and code unit.
 */
export function checkText(text: string, field: string, what = ''): void {
  const lone = LONE_SURROGATE.exec(text)
  if (lone === null) return
  const unit = text.charCodeAt(lone.index).toString(16).toUpperCase()
  throw new SandboxRequestError(
    `${field}: ${what}is not valid UTF-8 text: a lone surrogate U+${unit} at character ${lone.index} (an escaped \\u${unit.toLowerCase()}, or a byte that is not UTF-8)`,
  )
}

/** In a `u` regex a surrogate range matches only surrogates that are not half of a pair. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/** `text` cut to 80 characters with each lone surrogate shown as U+FFFD, for a message. */
export function shownText(text: string): string {
  const cut = text.length > 80 ? `${text.slice(0, 80)}...` : text
  return cut.replace(/[\uD800-\uDFFF]/gu, '\uFFFD')
}

/**
 * The text of a request body. Valid UTF-8 decodes as is; a body with bytes that are not UTF-8 has
 * each such byte B replaced by the JSON escape `\udcBB` (a lone low surrogate, as Python's
 * `surrogateescape` does) instead of a silent U+FFFD, so that `checkText` refuses the field that
 * held it. Outside a JSON string the escape makes the body malformed JSON (HTTP 400).
 */
export function utf8BodyText(body: Buffer): string {
  if (isUtf8(body)) return body.toString('utf8')
  const out: string[] = []
  let start = 0
  let i = 0
  while (i < body.length) {
    const n = validSequenceLength(body, i)
    if (n > 0) {
      i += n
      continue
    }
    out.push(body.subarray(start, i).toString('utf8'), `\\udc${body[i]!.toString(16).padStart(2, '0')}`)
    i++
    start = i
  }
  out.push(body.subarray(start).toString('utf8'))
  return out.join('')
}

/** Bytes of the well-formed UTF-8 sequence at `i` (RFC 3629), or 0 when none starts there. */
function validSequenceLength(b: Buffer, i: number): number {
  const c = b[i]!
  if (c < 0x80) return 1
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0
  return 0
}
