import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type ChatFormat,
  loadJinjaChatFormat,
  renderChat,
  Tokenizer,
  TriadChatFormat,
} from '../../gpu/index.ts'
import { ParseErrorCode, renderMessage } from '../../gpu/testing.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { QWEN3_TOKENIZER_DIR } from '../support/qwen3-tokenizer.ts'

const qwen = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR)

const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Add two numbers.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'mul',
      description: 'Multiply two numbers.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    },
  },
]

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a calculator.' },
  { role: 'user', content: 'What are 2+3 and 1+1?' },
  {
    role: 'assistant',
    content: '<think>\nAdd both.\n</think>\n\n',
    tool_calls: [
      { id: 'c0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
      { id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } },
    ],
  },
  { role: 'tool', content: '5', tool_call_id: 'c0' },
  { role: 'tool', content: '2', tool_call_id: 'c1' },
  { role: 'assistant', content: 'They are 5 and 2.' },
]

// Written by hand from Qwen3's chat_template: with tools, the system turn is the system message,
// a blank line, the "# Tools" block with each OpenAI schema as `tojson` (Python's json.dumps
// separators) and the call instructions; the first assistant turn comes after the last user query
// and has reasoning, so its <think> block is kept, its content ('' after </think>) gets no newline
// before the first call, each call is `<tool_call>\n{"name": "..", "arguments": ..}\n</tool_call>`
// joined by '\n'; consecutive tool results share one user turn of <tool_response> blocks; the last
// assistant turn is the last message, so it gets an empty <think> block.
const toolJson = (name: string, description: string) =>
  `{"type": "function", "function": {"name": "${name}", "description": "${description}", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}`
const expectedText =
  '<|im_start|>system\nYou are a calculator.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  `${toolJson('add', 'Add two numbers.')}\n${toolJson('mul', 'Multiply two numbers.')}\n</tools>\n\n` +
  'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\nWhat are 2+3 and 1+1?<|im_end|>\n' +
  '<|im_start|>assistant\n<think>\nAdd both.\n</think>\n\n' +
  '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n' +
  '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\n<think>\n\n</think>\n\nThey are 5 and 2.<|im_end|>\n'

describe('gpu/jinja-chat-format - the real Qwen3 chat template', () => {
  it('jinja-chat-format - a system message, two tool schemas, two tool calls and their results render to the exact text', () => {
    assert.equal(qwen.text(conversation, tools, false), expectedText)
    assert.deepEqual([...qwen.render(conversation, tools)], [...qwen.encode(expectedText)])
    assert.equal(
      qwen.text(conversation.slice(0, 2), tools, true),
      expectedText.slice(
        0,
        expectedText.indexOf('<|im_start|>assistant\n') + '<|im_start|>assistant\n'.length,
      ),
    )
  })

  it('jinja-chat-format - generation prompt, stop token and turn close of Qwen3', () => {
    assert.equal(qwen.decode(qwen.generationPrompt()), '<|im_start|>assistant\n')
    assert.deepEqual(qwen.stopTokens, [151645])
    assert.equal(qwen.vocabSize, 151669)
    const newline = [...qwen.encode('\n')]
    assert.deepEqual([...qwen.closeTurn([9707, 151645])], newline)
    assert.deepEqual([...qwen.closeTurn([9707])], [151645, ...newline])
    assert.equal(qwen.maxCloseLength, 1 + newline.length)
    const thinkingOff = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR, { variables: { enable_thinking: false } })
    assert.equal(
      thinkingOff.decode(thinkingOff.generationPrompt()),
      '<|im_start|>assistant\n<think>\n\n</think>\n\n',
    )
  })

  it("jinja-chat-format - continuation is the tool-result turn as the template writes it, while a re-rendering changes the history's tokens", () => {
    const history = conversation.slice(0, 3)
    const added = conversation.slice(3, 5)
    const suffix = qwen.decode(qwen.continuation(history, added, tools))
    assert.equal(
      suffix,
      '<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n',
    )
    // A later user query makes Qwen3 drop the first turn's reasoning when the history is re-rendered:
    // appending must not depend on that.
    const withQuery = [...history, ...added, { role: 'user', content: 'And 2*5?' } as ChatMessage]
    const rerendered = qwen.text(withQuery, tools, false)
    assert.equal(rerendered.includes('Add both.'), false)
    assert.equal(qwen.text(history, tools, false).includes('Add both.'), true)
    assert.equal(
      qwen.decode(qwen.continuation(history, withQuery.slice(3), tools)),
      '<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n' +
        '<|im_start|>user\nAnd 2*5?<|im_end|>\n',
    )
  })

  it('jinja-chat-format - a history that does not end with an assistant turn cannot be continued (one line)', () => {
    // Qwen3 closes a tool result only when no tool result follows: appending after it is unsound.
    for (const history of [conversation.slice(0, 4), conversation.slice(0, 2)])
      assert.throws(
        () => qwen.continuation(history, conversation.slice(4, 5), tools),
        (err: Error) =>
          err.name === 'TemplateError' &&
          err.message ===
            `chat_template of ${QWEN3_TOKENIZER_DIR}: the history must end with the assistant turn just generated, closed by <|im_end|>`,
      )
  })

  it("jinja-chat-format - renderChat masks exactly each assistant turn's body and end token", () => {
    const chat = qwen.renderChat(conversation, tools)
    assert.equal(qwen.decode(chat.ids), expectedText)
    const learned: string[] = []
    let run: number[] = []
    chat.lossMask.forEach((m, i) => {
      if (m) run.push(chat.ids[i]!)
      else if (run.length) {
        learned.push(qwen.decode(run))
        run = []
      }
    })
    if (run.length) learned.push(qwen.decode(run))
    assert.deepEqual(learned, [
      '<think>\nAdd both.\n</think>\n\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call><|im_end|>',
      '<think>\n\n</think>\n\nThey are 5 and 2.<|im_end|>',
    ])
  })
})

describe("gpu/jinja-chat-format - parsing Qwen3's own output", () => {
  it('jinja-chat-format - a <think> block and two tool calls in one turn', () => {
    const sampled = qwen.encode(
      '<think>\nAdd both.\n</think>\n\nLet me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call><|im_end|>',
    )
    const turn = qwen.parseTurn(sampled)
    assert.equal(turn.ok, true)
    assert.equal(turn.reasoning, 'Add both.')
    assert.equal(turn.text.endsWith('</tool_call>'), true)
    assert.deepEqual(turn.ok && turn.message, {
      role: 'assistant',
      content: 'Let me add.',
      tool_calls: [
        { id: 'call_0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
        { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } },
      ],
    })
  })

  it('jinja-chat-format - a plain answer after reasoning, and a thinking model whose <think> was in the prompt', () => {
    const a = qwen.parseTurn(qwen.encode('<think>\n\n</think>\n\nIt is 5.<|im_end|>'))
    assert.deepEqual(a, {
      ok: true,
      message: { role: 'assistant', content: 'It is 5.' },
      text: '<think>\n\n</think>\n\nIt is 5.',
      reasoning: '',
    })
    const b = qwen.parseTurn(qwen.encode('Sum first.\n</think>\n\nIt is 5.'))
    assert.equal(b.ok && b.message.content, 'It is 5.')
    assert.equal(b.reasoning, 'Sum first.')
  })

  it('jinja-chat-format - malformed turns are parse errors (invalid_action), never exceptions', () => {
    const cases: [string, ParseErrorCode][] = [
      ['<tool_call>\n{"name": "add", "arguments": {"a": 2}\n</tool_call><|im_end|>', ParseErrorCode.BadJson],
      ['<think>\nstill thinking', ParseErrorCode.BadThink],
      ['<think>a</think>b<think>c</think>d', ParseErrorCode.BadThink],
      ['<think>\nx\n</think>\n\n<tool_call>\n{"name": "add"}', ParseErrorCode.UnclosedToolCall],
      ['<tool_call>\n{"arguments": {}}\n</tool_call>', ParseErrorCode.MissingName],
    ]
    for (const [text, code] of cases) {
      const turn = qwen.parseTurn(qwen.encode(text))
      assert.equal(turn.ok, false, text)
      assert.equal(!turn.ok && turn.error.code, code, text)
    }
  })
})

describe('gpu/triad-chat-format - triad tokenizer and ChatML behind the same interface', () => {
  it('triad-chat-format - render, continuation, close and parse give the ids of chat-template.ts', () => {
    const tok = new Tokenizer()
    const format: ChatFormat = new TriadChatFormat(tok)
    const calls = conversation.slice(0, 2)
    assert.deepEqual([...format.render(calls, tools)], [...renderChat(tok, calls, { tools }).ids])
    const added = conversation.slice(3, 5)
    assert.deepEqual(
      [...format.continuation(conversation.slice(0, 3), added, tools)],
      [...renderMessage(tok, added[0]!).ids, ...renderMessage(tok, added[1]!).ids],
    )
    assert.deepEqual([...format.closeTurn([65, tok.imEndId])], [10])
    assert.deepEqual([...format.closeTurn([65])], [tok.imEndId, 10])
    assert.deepEqual(format.stopTokens, [tok.imEndId])
    const parsed = format.parseTurn(
      tok.encode('<tool_call>{"name":"add","arguments":{"a":1}}</tool_call><|im_end|>', {
        allowSpecial: true,
      }),
    )
    assert.equal(parsed.ok && parsed.message.tool_calls?.[0]?.function.arguments, '{"a":1}')
    assert.equal(parsed.reasoning, null)
  })
})
