import type { TaskRng } from '../rng.ts'

/** The instances of the `code` task (`code.ts`) and their generator: a problem family, the question, its answer and a program that prints it. */

/** Problem families, by difficulty. Closed set. */
export const CodeFamily = {
  DigitSum: 'digit_sum',
  Primes: 'primes',
  Fibonacci: 'fibonacci',
  Collatz: 'collatz',
} as const
export type CodeFamily = (typeof CodeFamily)[keyof typeof CodeFamily]
const FAMILIES: readonly CodeFamily[] = ['digit_sum', 'primes', 'fibonacci', 'collatz']

/** A code instance: the question, its answer and a program that prints it. */
export interface CodeInstance {
  family: CodeFamily
  question: string
  answer: string
  /** A correct Python program (the expert's). */
  program: string
}

/** Number of primes below n (sieve). */
function primesBelow(n: number): number {
  const s = new Uint8Array(n).fill(1)
  let c = 0
  for (let i = 2; i < n; i++) {
    if (!s[i]) continue
    c++
    for (let j = i * i; j < n; j += i) s[j] = 0
  }
  return c
}

/** Generates a code instance. */
export function generateCode(rng: TaskRng, difficulty: number): CodeInstance {
  const family = FAMILIES[difficulty - 1]!
  if (family === 'digit_sum') {
    const b = rng.int(3, 9)
    const k = rng.int(40, 300)
    const answer = String([...(BigInt(b) ** BigInt(k)).toString()].reduce((a, d) => a + Number(d), 0))
    return {
      family,
      question: `Digit sum of ${b}**${k}?`,
      answer,
      program: `print(sum(map(int,str(${b}**${k}))))`,
    }
  }
  if (family === 'primes') {
    const n = rng.int(20, 500) * 100
    return {
      family,
      question: `How many primes are below ${n}?`,
      answer: String(primesBelow(n)),
      program: `n=${n}\ns=[1]*n\ns[0]=s[1]=0\nfor i in range(2,int(n**.5)+1):\n if s[i]:s[i*i::i]=[0]*len(s[i*i::i])\nprint(sum(s))`,
    }
  }
  if (family === 'fibonacci') {
    const n = rng.int(1000, 90000)
    const m = rng.pick([1000, 9973, 65521, 1000003])
    let a = 0
    let b = 1
    for (let i = 0; i < n; i++) [a, b] = [b, (a + b) % m]
    return {
      family,
      question: `F(${n}) mod ${m}, with F(1)=F(2)=1?`,
      answer: String(a),
      program: `a,b=0,1\nfor _ in range(${n}):a,b=b,(a+b)%${m}\nprint(a)`,
    }
  }
  const n = rng.int(1000, 999999)
  let x = n
  let c = 0
  while (x !== 1) {
    x = x % 2 === 0 ? x / 2 : 3 * x + 1
    c++
  }
  return {
    family,
    question: `Collatz steps from ${n} to 1?`,
    answer: String(c),
    program: `n=${n};c=0\nwhile n!=1:\n n=n//2 if n%2==0 else 3*n+1;c+=1\nprint(c)`,
  }
}

/** The highest difficulty level (levels are 1 to this). */
export const CODE_MAX_DIFFICULTY = FAMILIES.length
