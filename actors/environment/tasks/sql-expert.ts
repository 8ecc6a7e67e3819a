import type { AssistantMessage, ChatMessage } from '../../../protocols/index.ts'
import { assistantTurns, deliberateTurn, lastToolResult } from '../deliberate-turn.ts'
import { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy } from '../task.ts'
import type { SqlInstance, SqlQuestionKind } from './sql-instance.ts'

/**
 * The scripted `sql` expert: one query that returns the answer, then `submit` of the value it read
 * from the result. A mistake is a wrong table or column name; the error comes back from SQLite and
 * the expert fixes the name. A failed episode submits a misread value.
 */

const PLAN: Record<SqlQuestionKind, string> = {
  total: 'Count all rows.',
  lookup: 'Look it up in people.',
  count: 'Count the matching rows.',
  aggregate: 'Aggregate salaries.',
  join: 'Join people and departments.',
}

/** Wrong names a hurried writer uses: [right, wrong]. */
const SLIPS: readonly [string, string][] = [
  ['salary', 'pay'],
  ['people', 'staff'],
  ['hired', 'hire_date'],
  ['departments', 'depts'],
  ['dept_id', 'dept'],
]

/** A value near `answer` that is not it. */
function misread(answer: string, instance: SqlInstance, rng: TaskRng): string {
  const n = Number(answer)
  if (Number.isFinite(n) && answer.trim() !== '') return String(n + (n >= 1000 ? 1000 : 1))
  if (/^\d{4}-/.test(answer)) return `${Number(answer.slice(0, 4)) + 1}${answer.slice(4)}`
  return rng.pick(instance.departments.map((d) => d.city).filter((c) => c !== answer))
}

/** Makes the expert for one instance. */
export function sqlExpert(instance: SqlInstance, options: ExpertOptions): Policy {
  const rng = new TaskRng(`sql-expert:${options.seed}:${instance.question}`)
  const fails = rng.chance(1 - options.successRate)
  let slip: [string, string] | undefined
  return {
    async act(messages: readonly ChatMessage[]): Promise<AssistantMessage> {
      const turn = assistantTurns(messages) + 1
      const result = lastToolResult(messages)
      if (slip) {
        const [right, wrong] = slip
        slip = undefined
        return deliberateTurn(`No ${wrong}; use ${right}.`, turn, 'execute_sql', { query: instance.query })
      }
      if (result === undefined || result.startsWith('error:')) {
        const candidates = SLIPS.filter(([right]) => instance.query.includes(right))
        if (candidates.length && rng.chance(options.errorRate)) {
          slip = rng.pick(candidates)
          const bad = instance.query.replace(slip[0], slip[1])
          return deliberateTurn(PLAN[instance.kind], turn, 'execute_sql', { query: bad })
        }
        return deliberateTurn(PLAN[instance.kind], turn, 'execute_sql', { query: instance.query })
      }
      // The answer is the first cell of the first row (the line after the header).
      const read = result.split('\n')[1]?.split('|')[0] ?? ''
      const answer = fails ? misread(read, instance, rng) : read
      return deliberateTurn(`Answer ${answer}.`, turn, 'submit', { answer })
    },
  }
}
