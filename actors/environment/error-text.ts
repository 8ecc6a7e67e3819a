/**
 * Error text for one-line messages about an outside service (a code sandbox, a policy endpoint):
 * what answered, or why nothing did, on one line.
 */

/** Most characters of what answered that an error line quotes. */
const DETAIL_CHARS = 300

/** `text` on one line (newlines and runs of blanks as one space), cut to 300 characters. */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > DETAIL_CHARS ? `${flat.slice(0, DETAIL_CHARS)}...` : flat
}

/**
 * An error's message with the messages of its causes that it does not already contain, in
 * parentheses (fetch says only `fetch failed`; its cause says `bad port` or `connect ECONNREFUSED`).
 */
export function describeError(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err)
  let cause = err instanceof Error ? err.cause : undefined
  for (let depth = 0; cause !== undefined && depth < 4; depth++) {
    const m = cause instanceof Error ? cause.message : String(cause)
    if (m && !text.includes(m)) text += ` (${m})`
    cause = cause instanceof Error ? cause.cause : undefined
  }
  return text
}
