import type { TaskRng } from '../rng.ts'

/** The instances of the `calc` task (`calc.ts`) and their generator: a start amount and a chain of operations, with the amount after each. */

/** One operation of the chain. */
export interface CalcOp {
  op: '+' | '-' | '*' | '/'
  n: number
}

/** A calc instance. `values[i]` is the amount after `ops[i]`; the last one is the answer. */
export interface CalcInstance {
  question: string
  start: number
  ops: CalcOp[]
  values: number[]
  answer: number
}

/** Per level: operations, digits of the start amount and addends, largest multiplier. */
const LEVELS: readonly { ops: number; digits: number; mult: [number, number] }[] = [
  { ops: 1, digits: 1, mult: [2, 9] },
  { ops: 2, digits: 2, mult: [2, 9] },
  { ops: 2, digits: 3, mult: [3, 19] },
  { ops: 3, digits: 3, mult: [3, 99] },
  { ops: 3, digits: 4, mult: [11, 99] },
  { ops: 4, digits: 4, mult: [11, 999] },
  { ops: 5, digits: 5, mult: [11, 999] },
]

const NAMES = ['Ann', 'Bo', 'Cy', 'Di', 'Ed', 'Flo', 'Gus', 'Ivy']
const NOUNS = ['coins', 'apples', 'stamps', 'beads', 'cards', 'nails']
const LIMIT = 1e12

const phrase = (o: CalcOp): string =>
  o.op === '+'
    ? `gets ${o.n} more`
    : o.op === '-'
      ? `gives away ${o.n}`
      : o.op === '*'
        ? `then has ${o.n} times as many`
        : `splits them into ${o.n} equal piles and keeps one`

/** Applies one operation. */
export function applyOp(v: number, o: CalcOp): number {
  return o.op === '+' ? v + o.n : o.op === '-' ? v - o.n : o.op === '*' ? v * o.n : v / o.n
}

/** Generates a calc instance. */
export function generateCalc(rng: TaskRng, difficulty: number): CalcInstance {
  const level = LEVELS[difficulty - 1]!
  const lo = 10 ** (level.digits - 1)
  const hi = 10 ** level.digits - 1
  const start = rng.int(lo, hi)
  const mulAt = level.ops >= 2 ? rng.int(0, level.ops - 1) : -1
  const ops: CalcOp[] = []
  const values: number[] = []
  let v = start
  for (let k = 0; k < level.ops; k++) {
    let kind = k === mulAt ? '*' : rng.pick(['+', '-', '*', '/'] as const)
    if (kind === '*' && v * level.mult[1] > LIMIT) kind = '+'
    let o: CalcOp
    if (kind === '/') {
      const divisors: number[] = []
      for (let d = Math.max(2, level.mult[0]); d <= Math.min(level.mult[1], 99); d++)
        if (v % d === 0) divisors.push(d)
      o = divisors.length ? { op: '/', n: rng.pick(divisors) } : { op: '+', n: rng.int(lo, hi) }
    } else if (kind === '*') o = { op: '*', n: rng.int(level.mult[0], level.mult[1]) }
    else if (kind === '-' && v > lo) o = { op: '-', n: rng.int(Math.max(1, Math.floor(lo / 2)), v - 1) }
    else o = { op: '+', n: rng.int(lo, hi) }
    v = applyOp(v, o)
    ops.push(o)
    values.push(v)
  }
  const name = rng.pick(NAMES)
  const noun = rng.pick(NOUNS)
  const parts = ops.map(phrase)
  const question = `${name} has ${start} ${noun}, ${parts.join(', ')}. How many ${noun} now?`
  return { question, start, ops, values, answer: v }
}

/** The highest difficulty level (levels are 1 to this). */
export const CALC_MAX_DIFFICULTY = LEVELS.length
