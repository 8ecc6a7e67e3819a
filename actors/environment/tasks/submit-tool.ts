import type { ToolSchema } from '../../../protocols/index.ts'

/**
 * The `submit(answer)` tool that ends an episode with the policy's final answer, shared by the
 * tasks that have one. `answerType` is the JSON Schema type of `answer` (`'number'` for calc,
 * `['string', 'number']` where an answer may be either).
 */
export function submitTool(answerType: string | readonly string[]): ToolSchema {
  return {
    type: 'function',
    function: {
      name: 'submit',
      description: 'Give the final answer',
      parameters: {
        type: 'object',
        properties: { answer: { type: answerType } },
        required: ['answer'],
        additionalProperties: false,
      },
    },
  }
}
