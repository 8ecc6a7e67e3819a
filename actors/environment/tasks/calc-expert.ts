import type { AssistantMessage, ChatMessage } from '../../../protocols/index.ts'
import { assistantTurns, deliberateTurn, lastToolResult } from '../deliberate-turn.ts'
import { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy } from '../task.ts'
import type { CalcInstance, CalcOp } from './calc-instance.ts'

/**
 * The scripted `calc` expert: one calculator call per operation on the value the calculator last
 * returned, then `submit`. A mistake is a mistyped operand, noticed and redone on the next turn.
 * A failed episode forgets the last operation and submits the value before it.
 */

const PLAN: Record<CalcOp['op'], string> = { '+': 'Add', '-': 'Subtract', '*': 'Times', '/': 'Divide by' }

/** A wrong operand near the right one (a typo). */
function typo(n: number, rng: TaskRng): number {
  const s = String(n)
  if (s.length >= 2 && s[0] !== s[1] && rng.chance(0.5)) return Number(s[1] + s[0] + s.slice(2))
  return n + (rng.chance(0.5) || n <= 2 ? 1 : -1)
}

/** Makes the expert for one instance. */
export function calcExpert(instance: CalcInstance, options: ExpertOptions): Policy {
  const rng = new TaskRng(`calc-expert:${options.seed}:${instance.question}`)
  const fails = rng.chance(1 - options.successRate)
  let k = 0
  let cur = instance.start
  let typoOf: number | undefined
  return {
    async act(messages: readonly ChatMessage[]): Promise<AssistantMessage> {
      const turn = assistantTurns(messages) + 1
      const result = lastToolResult(messages)
      if (result !== undefined && typoOf === undefined && k > 0) cur = Number(result)
      if (typoOf !== undefined) {
        const o = instance.ops[k - 1]!
        const plan = `Typo: ${typoOf} should be ${o.n}. Redo.`
        typoOf = undefined
        return deliberateTurn(plan, turn, 'calculator', { expression: `${cur}${o.op}${o.n}` })
      }
      if (k < instance.ops.length) {
        const o = instance.ops[k]!
        k += 1
        if (rng.chance(options.errorRate)) {
          typoOf = typo(o.n, rng)
          return deliberateTurn(`${PLAN[o.op]} ${o.n}.`, turn, 'calculator', {
            expression: `${cur}${o.op}${typoOf}`,
          })
        }
        return deliberateTurn(`${PLAN[o.op]} ${o.n}.`, turn, 'calculator', {
          expression: `${cur}${o.op}${o.n}`,
        })
      }
      const answer = fails ? instance.values[instance.values.length - 2]! : cur
      return deliberateTurn(`Answer ${answer}.`, turn, 'submit', { answer })
    },
  }
}
