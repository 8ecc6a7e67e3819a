import type { AssistantMessage, ChatMessage } from '../../../protocols/index.ts'
import { assistantTurns, deliberateTurn, lastToolResult } from '../deliberate-turn.ts'
import { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy } from '../task.ts'
import type { CodeFamily, CodeInstance } from './code-instance.ts'

/**
 * The scripted `code` expert: writes a short program, runs it, submits what it printed. A mistake
 * is a typo (`prnt`) that the sandbox reports as a NameError; the expert fixes it and runs again.
 * A failed episode submits a miscopied number.
 */

const PLAN: Record<CodeFamily, string> = {
  digit_sum: 'Compute the power, sum its digits.',
  primes: 'Sieve and count.',
  fibonacci: 'Iterate mod m.',
  collatz: 'Count the steps.',
}

/** Makes the expert for one instance. */
export function codeExpert(instance: CodeInstance, options: ExpertOptions): Policy {
  const rng = new TaskRng(`code-expert:${options.seed}:${instance.question}`)
  const fails = rng.chance(1 - options.successRate)
  let typo = false
  return {
    async act(messages: readonly ChatMessage[]): Promise<AssistantMessage> {
      const turn = assistantTurns(messages) + 1
      const result = lastToolResult(messages)
      if (typo) {
        typo = false
        return deliberateTurn('Typo: prnt. Fix it.', turn, 'run_python', { code: instance.program })
      }
      if (result === undefined || result.startsWith('error:')) {
        if (rng.chance(options.errorRate)) {
          typo = true
          return deliberateTurn(PLAN[instance.family], turn, 'run_python', {
            code: instance.program.replace('print(', 'prnt('),
          })
        }
        return deliberateTurn(PLAN[instance.family], turn, 'run_python', { code: instance.program })
      }
      const printed = result.trim()
      const answer = fails ? String(Number(printed) + 1) : printed
      return deliberateTurn(`Answer ${answer}.`, turn, 'submit', { answer })
    },
  }
}
