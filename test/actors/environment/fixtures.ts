import type { Task } from '../../../actors/environment/index.ts'
import type { AssistantMessage } from '../../../protocols/index.ts'

/** An assistant message with the given tool calls (`[name, argumentsString]`). */
export function calls(...list: [string, string][]): AssistantMessage {
  return {
    role: 'assistant',
    content: 'plan',
    tool_calls: list.map(([name, args], i) => ({
      id: `t${i}`,
      type: 'function',
      function: { name, arguments: args },
    })),
  }
}

/** A tiny task for session tests: `add(n)` adds to a total, `done()` ends (solved when total is 3),
 *  `boom()` throws (a task bug). */
export const counterTask: Task<{ target: number; nonce: number }> = {
  name: 'counter',
  description: 'test task',
  tools: [
    {
      type: 'function',
      function: {
        name: 'add',
        description: 'add n',
        parameters: {
          type: 'object',
          properties: { n: { type: 'integer', minimum: 1 } },
          required: ['n'],
          additionalProperties: false,
        },
      },
    },
    { type: 'function', function: { name: 'done', description: 'finish', parameters: { type: 'object' } } },
    { type: 'function', function: { name: 'boom', description: 'fails', parameters: { type: 'object' } } },
  ],
  limits: { maxTurns: 5, maxContextBytes: 400, maxInvalidActions: 1 },
  difficulty: { min: 1, max: 3, default: 1 },
  generate: (rng) => ({ target: 3, nonce: rng.int(0, 1e9) }),
  key: (i) => String(i.nonce),
  open(instance) {
    let total = 0
    return {
      messages: [{ role: 'user', content: `reach ${instance.target}` }],
      call(name, args) {
        if (name === 'boom') throw new Error('kaboom')
        if (name === 'done') {
          const success = total === instance.target
          return { content: success ? 'yes' : 'no', good: success, done: true, success }
        }
        total += args.n as number
        return { content: String(total), good: total <= instance.target }
      },
    }
  },
  expert: () => ({ act: async () => calls(['done', '{}']) }),
}
