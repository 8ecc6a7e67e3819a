/**
 * NATS subject matching: tokens separated by `.`, `*` matches one token, `>` (last) matches one or more.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.')
  const s = subject.split('.')
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i
    if (i >= s.length) return false
    if (p[i] !== '*' && p[i] !== s[i]) return false
  }
  return p.length === s.length
}
