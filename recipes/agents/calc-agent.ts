/**
 * A calculator agent written against the official `openai` package, with no triad import: the
 * kind of program triad trains through its agent gateway (docs/gateway.md). It owns its loop:
 * it asks the model the instance's question with two tools, `calculator(expression)` and
 * `submit(answer)`, runs the calculator calls the model makes, and rewards the episode 1 if the
 * answer is right, else 0: the submitted number, or (an answer without a tool call) the last number
 * of the text. Its tools and system prompt are those of triad's built-in `calc` task, so a policy
 * cold-started on calc's expert episodes already speaks them (`recipes/quickstart-agent.ts`).
 *
 * triad starts it with `OPENAI_BASE_URL` (the session's base URL, so no header is needed),
 * `OPENAI_API_KEY`, `TRIAD_INSTANCE` (`{"question", "answer", "index"}`), `TRIAD_MAX_TURNS` and
 * `TRIAD_REWARD_URL`. Run by hand against any OpenAI-compatible server the same way.
 */
import OpenAI from 'openai'
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'

const instance = JSON.parse(process.env.TRIAD_INSTANCE ?? '{}') as { question?: string; answer?: number }
if (typeof instance.question !== 'string' || typeof instance.answer !== 'number') {
  process.stderr.write('calc-agent: TRIAD_INSTANCE must be {"question": string, "answer": number}\n')
  process.exit(2)
}
const maxTurns = Number(process.env.TRIAD_MAX_TURNS ?? '4')
// The client reads OPENAI_BASE_URL and OPENAI_API_KEY itself.
const client = new OpenAI({ maxRetries: 2 })

const tools: ChatCompletionTool[] = [
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
  {
    type: 'function',
    function: {
      name: 'submit',
      description: 'Give the final answer',
      parameters: {
        type: 'object',
        properties: { answer: { type: 'number' } },
        required: ['answer'],
        additionalProperties: false,
      },
    },
  },
]

/** `+ - * /` and parentheses over decimal numbers, by recursive descent (no `eval`). */
function calculate(expression: string): number {
  let i = 0
  const s = expression.replace(/\s+/g, '')
  const number = (): number => {
    if (s[i] === '(') {
      i++
      const v = sum()
      // bare: a standalone program that imports nothing of triad
      if (s[i++] !== ')') throw new Error('missing )')
      return v
    }
    if (s[i] === '-') {
      i++
      return -number()
    }
    const m = /^\d+(\.\d+)?/.exec(s.slice(i))
    // bare: a standalone program that imports nothing of triad
    if (!m) throw new Error(`expected a number at ${i}`)
    i += m[0].length
    return Number(m[0])
  }
  const product = (): number => {
    let v = number()
    while (s[i] === '*' || s[i] === '/') v = s[i++] === '*' ? v * number() : v / number()
    return v
  }
  const sum = (): number => {
    let v = product()
    while (s[i] === '+' || s[i] === '-') v = s[i++] === '+' ? v + product() : v - product()
    return v
  }
  const v = sum()
  // bare: a standalone program that imports nothing of triad
  if (i !== s.length) throw new Error(`unexpected '${s[i]}' at ${i}`)
  return v
}

const messages: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'Solve it with the tools. Plan briefly before each call.' },
  { role: 'user', content: instance.question },
]
/** The answer: the submitted number, or the text of a turn without a tool call. */
let answer: string | undefined
for (let turn = 0; turn < maxTurns && answer === undefined; turn++) {
  const reply = await client.chat.completions.create({ model: 'policy', messages, tools })
  const message = reply.choices[0]!.message
  // The message goes back as it came: the gateway then reuses the ids it sampled.
  messages.push(message)
  if (!message.tool_calls?.length) {
    answer = message.content ?? ''
    break
  }
  for (const call of message.tool_calls) {
    let content: string
    try {
      // bare: a standalone program that imports nothing of triad
      if (call.type !== 'function') throw new Error('not a function call')
      const args = JSON.parse(call.function.arguments) as { expression?: unknown; answer?: unknown }
      if (call.function.name === 'submit') {
        answer = String(args.answer)
        break
      }
      if (call.function.name !== 'calculator') {
        // bare: a standalone program that imports nothing of triad
        throw new Error(`no tool '${call.function.name}'; the tools are calculator and submit`)
      }
      content = String(calculate(String(args.expression)))
    } catch (err) {
      content = `error: ${(err as Error).message}`
    }
    messages.push({ role: 'tool', tool_call_id: call.id, content })
  }
}
const last = answer?.match(/-?\d+(\.\d+)?/g)?.at(-1)
const reward = last !== undefined && Number(last) === instance.answer ? 1 : 0
const res = await fetch(process.env.TRIAD_REWARD_URL!, {
  method: 'POST',
  headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify({ reward }),
})
if (!res.ok) {
  process.stderr.write(`calc-agent: the reward was refused: ${res.status} ${await res.text()}\n`)
  process.exit(1)
}
