/**
 * A safe evaluator for the calculator tool: numbers (integer or decimal), `+ - * /`, unary minus
 * and parentheses, by recursive descent. No names, no calls, nothing else is accepted.
 */

/** An expression that cannot be evaluated; `position` is the 0-based offset of the problem. */
export class ArithmeticError extends Error {
  override name = 'ArithmeticError'
  readonly position: number
  constructor(message: string, position: number) {
    super(message)
    this.position = position
  }
}

/**
 * Evaluates an arithmetic expression.
 * @throws ArithmeticError for a syntax error, division by zero, or a non-finite result.
 * @example evaluate('(372+48)*4') // 1680
 */
export function evaluate(expression: string): number {
  const s = expression
  let i = 0
  const skip = () => {
    while (i < s.length && s[i] === ' ') i++
  }
  const fail = (what: string): never => {
    throw new ArithmeticError(i < s.length ? `${what} at '${s.slice(i, i + 8)}'` : `${what} at end`, i)
  }
  const primary = (): number => {
    skip()
    if (s[i] === '(') {
      i++
      const v = sum()
      skip()
      if (s[i] !== ')') fail("expected ')'")
      i++
      return v
    }
    if (s[i] === '-') {
      i++
      return -primary()
    }
    if (s[i] === '+') {
      i++
      return primary()
    }
    const m = /^\d[\d,_]*(\.\d+)?|^\.\d+/.exec(s.slice(i))
    if (!m) fail('expected a number')
    i += m![0].length
    return Number(m![0].replace(/[,_]/g, ''))
  }
  const product = (): number => {
    let v = primary()
    for (;;) {
      skip()
      const op = s[i]
      if (op !== '*' && op !== '/' && op !== 'x' && op !== '×') return v
      i++
      const r = primary()
      if (op === '/' && r === 0) throw new ArithmeticError('division by zero', i)
      v = op === '/' ? v / r : v * r
    }
  }
  const sum = (): number => {
    let v = product()
    for (;;) {
      skip()
      const op = s[i]
      if (op !== '+' && op !== '-') return v
      i++
      const r = product()
      v = op === '+' ? v + r : v - r
    }
  }
  const v = sum()
  skip()
  if (i < s.length) fail('unexpected input')
  if (!Number.isFinite(v)) throw new ArithmeticError('result is not finite', i)
  return v
}

/** Formats a result: integers exactly, others with up to 6 decimals. */
export function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v)
  return String(Number(v.toFixed(6)))
}
