/**
 * Writes the calc agent's instance files: word problems `{"question", "answer"}` of the kind of
 * `calc-instances.jsonl` (a sum `a + b` or a product `a * m`), drawn with a seeded generator, the
 * held-out file's questions never among the training file's. The committed files were made with
 *
 *   node --import tsx recipes/agents/calc-questions.ts recipes/agents/calc-train.jsonl 512 1 recipes/agents/calc-eval.jsonl 64 2
 *
 * (a file, a count and a seed per file; a file's questions exclude those of the files before it).
 */
import { writeFileSync } from 'node:fs'

const NAMES = ['Ann', 'Bo', 'Cy', 'Di', 'Ed', 'Flo', 'Gus', 'Hal', 'Ivy', 'Jo', 'Kit', 'Lu', 'Max', 'Nia']
const THINGS = ['apples', 'beads', 'cards', 'coins', 'nails', 'stamps', 'shells', 'pens']

/** Mulberry32: a small seeded uniform source in [0, 1). */
function uniform(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** One word problem from `u`: a sum of two numbers of 2..19, or a product of 2..9 by 2..5. */
function question(u: () => number): { question: string; answer: number } {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(u() * xs.length)]!
  const name = pick(NAMES)
  const thing = pick(THINGS)
  if (u() < 0.6) {
    const a = 2 + Math.floor(u() * 18)
    const b = 2 + Math.floor(u() * 18)
    return {
      question: `${name} has ${a} ${thing} and gets ${b} more. How many ${thing} does ${name} have?`,
      answer: a + b,
    }
  }
  const a = 2 + Math.floor(u() * 8)
  const m = 2 + Math.floor(u() * 4)
  return {
    question: `${name} has ${a} ${thing} and then has ${m} times as many. How many ${thing} does ${name} have?`,
    answer: a * m,
  }
}

const args = process.argv.slice(2)
if (args.length === 0 || args.length % 3 !== 0) {
  process.stderr.write('usage: calc-questions.ts FILE COUNT SEED [FILE COUNT SEED ...]\n')
  process.exit(2)
}
const seen = new Set<string>()
for (let f = 0; f < args.length; f += 3) {
  const [file, count, seed] = [args[f]!, Number(args[f + 1]), Number(args[f + 2])]
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(seed)) {
    process.stderr.write(`calc-questions: COUNT must be a positive integer and SEED an integer (${file})\n`)
    process.exit(2)
  }
  const u = uniform(seed)
  const rows: string[] = []
  for (let tries = 0; rows.length < count; tries++) {
    if (tries > count * 1_000) {
      process.stderr.write(`calc-questions: fewer than ${count} distinct questions left for ${file}\n`)
      process.exit(1)
    }
    const q = question(u)
    if (seen.has(q.question)) continue
    seen.add(q.question)
    rows.push(JSON.stringify(q))
  }
  writeFileSync(file, `${rows.join('\n')}\n`)
}
