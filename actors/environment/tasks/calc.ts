import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { ArithmeticError, evaluate, formatNumber } from './arithmetic.ts'
import { calcExpert } from './calc-expert.ts'
import { CALC_MAX_DIFFICULTY, type CalcInstance, generateCalc } from './calc-instance.ts'
import { submitTool } from './submit-tool.ts'

/**
 * `calc`: arithmetic word problems with numbers too large to do in one's head. A start amount
 * goes through a chain of operations; tools `calculator(expression)` and `submit(answer)`.
 * Difficulty (1..7) sets the number of operations and the digits of the operands; level 1 is one
 * operation on one-digit numbers (a warm-up a small model can solve after cold-start SFT).
 */

/** The `calc` task. */
export const calc: Task<CalcInstance> = {
  name: 'calc',
  description: 'arithmetic word problems solved with a calculator tool',
  tools: [
    {
      type: 'function',
      function: {
        name: 'calculator',
        description: 'Evaluate + - * / ( )',
        parameters: {
          type: 'object',
          properties: { expression: { type: 'string' } },
          required: ['expression'],
          additionalProperties: false,
        },
      },
    },
    submitTool('number'),
  ],
  limits: { maxTurns: 16, maxContextBytes: 4096, maxInvalidActions: 2 },
  difficulty: { min: 1, max: CALC_MAX_DIFFICULTY, default: 1 },
  generate: generateCalc,
  key: (i) => i.question,
  open(instance): TaskEpisode {
    const useful = new Set(instance.values)
    return {
      messages: [
        { role: 'system', content: 'Solve it with the tools. Plan briefly before each call.' },
        { role: 'user', content: instance.question },
      ],
      call(name, args): ToolOutcome {
        if (name === 'submit') {
          const success = Math.abs((args.answer as number) - instance.answer) < 1e-6
          return { content: success ? 'correct' : 'wrong', good: success, done: true, success }
        }
        try {
          const v = evaluate(args.expression as string)
          return { content: formatNumber(v), good: useful.has(v) }
        } catch (e) {
          if (e instanceof ArithmeticError)
            return { content: `error: ${e.message}`, good: false, toolError: true }
          throw e
        }
      },
    }
  },
  expert: (instance: CalcInstance, options: ExpertOptions): Policy => calcExpert(instance, options),
}
