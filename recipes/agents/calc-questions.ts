/**
 * Writes instance files of the calc agent, `{"question", "answer"}` per line, from triad's built-in
 * `calc` task: instances `0..count-1` of its `train` or `eval` split at a level. The eval split is
 * made by content (docs/design.md#controller-and-workers: a question whose key hashes into the held-out share),
 * so a file of the eval split shares no question with one of the train split, and the agent's
 * held-out questions are those the built-in calc task is evaluated on. The committed files were
 * made with
 *
 *   node --import tsx recipes/agents/calc-questions.ts train 512 1 > recipes/agents/calc-train.jsonl
 *   node --import tsx recipes/agents/calc-questions.ts eval 64 1 > recipes/agents/calc-eval.jsonl
 *
 * (split, count, level).
 */
import { getTask, resolveInstance, TaskRng } from '../../actors/index.ts'

const [split, countArg, levelArg] = process.argv.slice(2)
const count = Number(countArg)
const level = Number(levelArg ?? 1)
const calc = getTask('calc')
if (
  (split !== 'train' && split !== 'eval') ||
  !Number.isInteger(count) ||
  count < 1 ||
  !Number.isInteger(level) ||
  level < calc.difficulty.min ||
  level > calc.difficulty.max
) {
  process.stderr.write(
    `usage: calc-questions.ts train|eval COUNT [LEVEL]: COUNT a positive integer, LEVEL ${calc.difficulty.min}..${calc.difficulty.max} (default 1)\n`,
  )
  process.exit(2)
}
// Each instance comes from its index; the random source is never drawn from.
const unused = new TaskRng('calc-questions')
const lines: string[] = []
for (let index = 0; index < count; index++) {
  const { instance } = resolveInstance(calc, { index, difficulty: level, split }, unused)
  const { question, answer } = instance as { question: string; answer: number }
  lines.push(JSON.stringify({ question, answer }))
}
process.stdout.write(`${lines.join('\n')}\n`)
