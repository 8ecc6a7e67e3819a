import { InvalidArgumentError } from 'commander'

/**
 * Parsers of numeric command-line options, for commander's `.option(flags, description, parser,
 * default)`. A bad value is an `InvalidArgumentError`, which commander prints naming the option
 * and the value, and triad then exits with status 2 (`hintHelpAfterErrors`):
 *
 *   error: option '--difficulty <d>' argument 'abc' is invalid. Expected an integer >= 1.
 *
 * Defaults given next to a parser are not parsed: give them as numbers.
 */

/** Inclusive bounds of a numeric option. */
export interface NumericBounds {
  min?: number
  max?: number
}

/** `an integer >= 1`, `a number in [0, 1]`, `an integer in 1..65535`. */
function expected(kind: 'integer' | 'number', { min, max }: NumericBounds): string {
  const what = kind === 'integer' ? 'an integer' : 'a number'
  if (min !== undefined && max !== undefined)
    return kind === 'integer' ? `${what} in ${min}..${max}` : `${what} in [${min}, ${max}]`
  if (min !== undefined) return `${what} >= ${min}`
  if (max !== undefined) return `${what} <= ${max}`
  return what
}

const inBounds = (n: number, { min, max }: NumericBounds) =>
  (min === undefined || n >= min) && (max === undefined || n <= max)

/**
 * A parser of a whole decimal number within `bounds` (`12`, `-3`; not `1.5`, `1e3`, `0x10` or
 * an empty string).
 * @throws InvalidArgumentError "Expected an integer >= 1." for anything else.
 */
export function integerOption(bounds: NumericBounds = {}): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!/^\s*[+-]?\d+\s*$/.test(value) || !Number.isSafeInteger(n) || !inBounds(n, bounds))
      throw new InvalidArgumentError(`Expected ${expected('integer', bounds)}.`)
    return n
  }
}

/**
 * A parser of a finite decimal number within `bounds` (`0.2`, `1e-3`; not `NaN`, `Infinity` or
 * an empty string).
 * @throws InvalidArgumentError "Expected a number in [0, 1]." for anything else.
 */
export function numberOption(bounds: NumericBounds = {}): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (value.trim() === '' || !Number.isFinite(n) || !inBounds(n, bounds))
      throw new InvalidArgumentError(`Expected ${expected('number', bounds)}.`)
    return n
  }
}
