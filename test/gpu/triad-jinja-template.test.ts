import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Template } from '@huggingface/jinja'
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers'
import {
  createTransformer,
  disposeTransformer,
  exportHf,
  learnTaskTokenizer,
  loadJinjaChatFormat,
  renderChat,
  renderPrompt,
  saveCheckpoint,
  type Tokenizer,
  TriadChatFormat,
} from '../../gpu/index.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { useTestBackend } from '../support/test-backend.ts'

const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'adds two numbers',
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
      name: 'query',
      description: 'runs <tool_call> SQL',
      parameters: {
        type: 'object',
        properties: {
          sql: { type: 'string' },
          mode: { enum: ['read', 'write', 3] },
          tags: { type: 'array', items: { type: 'string' } },
          any: { type: 'array' },
          where: {
            type: 'object',
            properties: { col: { type: ['string', 'null'] }, op: {} },
            required: ['col'],
          },
          opts: { type: 'object' },
        },
        required: ['sql'],
      },
    },
  },
]

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
})

/** Conversations of every shape triad trains on: tools, tool calls, tool results, no-call turns. */
const conversations: { name: string; messages: ChatMessage[]; tools: ToolSchema[] }[] = [
  {
    name: 'system, tools, two calls in one turn, their results, a final answer',
    tools,
    messages: [
      { role: 'system', content: 'You are a calculator.' },
      { role: 'user', content: 'What is 2+3, and 4+5? Ünïcode ✓ 数字' },
      {
        role: 'assistant',
        content: 'Let me add.',
        tool_calls: [call('call_0', 'add', '{"a":2,"b":3}'), call('call_1', 'add', '{"a":4,"b":5}')],
      },
      { role: 'tool', content: '5', tool_call_id: 'call_0' },
      { role: 'tool', content: '9', tool_call_id: 'call_1' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [call('call_0', 'query', '{"sql":"SELECT \\"x\\" <b>","mode":"read","tags":["a"]}')],
      },
      { role: 'tool', content: 'x\n<|im_end|> not a turn end', tool_call_id: 'call_0' },
      { role: 'assistant', content: '5 and 9.' },
    ],
  },
  {
    name: 'tools without a system message; a turn without a call answered by a user message',
    tools: tools.slice(0, 1),
    messages: [
      { role: 'user', content: 'add   2\n\n and 3 <tool_call>{"name":"add"}</tool_call>' },
      { role: 'assistant', content: 'it is 5' },
      { role: 'user', content: 'error: no tool call; call one of: add' },
      { role: 'assistant', content: '', tool_calls: [call('call_0', 'add', '{"a":2,"b":3}')] },
    ],
  },
  {
    name: 'no tools',
    tools: [],
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello  there\t!' },
    ],
  },
]

/** The messages with tool-call arguments as objects (the `transformers` convention). */
const withObjectArguments = (messages: readonly ChatMessage[]) =>
  messages.map((m) =>
    m.role === 'assistant' && m.tool_calls
      ? {
          ...m,
          tool_calls: m.tool_calls.map((c) => ({
            ...c,
            function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown },
          })),
        }
      : m,
  )

describe('triad export --hf: the chat template the model was trained with', () => {
  let root: string
  let out: string
  let tokenizer: Tokenizer
  let template: Template
  let hf: HfTokenizer

  before(async () => {
    await useTestBackend()
    root = await mkdtemp(path.join(tmpdir(), 'triad-jinja-export-'))
    // A tokenizer with merges, learned from the conversations' own ids, so BPE chunks meet the
    // template's joins.
    tokenizer = learnTaskTokenizer(
      conversations.map((c) => renderChat(learnTaskTokenizer([], 0), c.messages, { tools: c.tools }).ids),
      60,
    )
    assert.ok(tokenizer.mergeCount > 20, `learned ${tokenizer.mergeCount} merges`)
    const model = createTransformer({
      layers: 1,
      width: 16,
      heads: 2,
      contextLength: 64,
      vocabSize: tokenizer.vocabSize,
    })
    const ckpt = path.join(root, 'ckpt')
    await saveCheckpoint(ckpt, model, { tokenizer })
    disposeTransformer(model)
    out = path.join(root, 'hf')
    await exportHf(ckpt, out)
    const config = JSON.parse(readFileSync(path.join(out, 'tokenizer_config.json'), 'utf8'))
    assert.equal(typeof config.chat_template, 'string')
    template = new Template(config.chat_template)
    hf = new HfTokenizer(JSON.parse(readFileSync(path.join(out, 'tokenizer.json'), 'utf8')), config)
  })
  after(async () => {
    await rm(root, { recursive: true, force: true })
  })

  const hfIds = (messages: unknown[], t: readonly ToolSchema[], addGenerationPrompt: boolean) => {
    const text = template.render({
      messages,
      tools: t.length ? t : undefined,
      add_generation_prompt: addGenerationPrompt,
      eos_token: '<|im_end|>',
    })
    return hf.encode(text, { add_special_tokens: false }).ids
  }

  for (const c of conversations)
    it(`export - rendered with @huggingface/jinja and tokenized by tokenizer.json: triad's ids (${c.name})`, () => {
      const want = Array.from(renderChat(tokenizer, c.messages, { tools: c.tools }).ids)
      assert.deepEqual(hfIds(c.messages, c.tools, false), want, 'arguments as JSON strings')
      assert.deepEqual(hfIds(withObjectArguments(c.messages), c.tools, false), want, 'arguments as objects')
      const prompt = c.messages.slice(0, -1)
      assert.deepEqual(
        hfIds(prompt, c.tools, true),
        Array.from(renderPrompt(tokenizer, prompt, { tools: c.tools })),
        'the generation prompt is the assistant header',
      )
    })

  it('export - the exported directory read back as a Jinja chat format gives triad chat format ids and loss masks', () => {
    const jinja = loadJinjaChatFormat(out)
    const triad = new TriadChatFormat(tokenizer)
    assert.deepEqual(Array.from(jinja.generationPrompt()), Array.from(triad.generationPrompt()))
    assert.deepEqual(jinja.stopTokens, triad.stopTokens)
    for (const c of conversations) {
      const a = jinja.renderChat(c.messages, c.tools)
      const b = triad.renderChat(c.messages, c.tools)
      assert.deepEqual(Array.from(a.ids), Array.from(b.ids), c.name)
      assert.deepEqual(Array.from(a.lossMask), Array.from(b.lossMask), c.name)
      // Token in, token out: each added message continues the history as triad's format does.
      const k = c.messages.findIndex((m, i) => i > 0 && m.role === 'assistant')
      const history = c.messages.slice(0, k + 1)
      const added = c.messages.slice(k + 1, k + 2)
      if (added.length && added[0]!.role !== 'assistant')
        assert.deepEqual(
          Array.from(jinja.continuation(history, added, c.tools)),
          Array.from(triad.continuation(history, added, c.tools)),
          c.name,
        )
    }
  })

  it("export - Python's jinja2 set up as transformers' apply_chat_template renders the same text", (t) => {
    // transformers renders with an ImmutableSandboxedEnvironment (trim_blocks, lstrip_blocks), its
    // own tojson (json.dumps, ensure_ascii=False) and raise_exception.
    const script = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
def raise_exception(message):
    raise ValueError(message)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = tojson
env.globals['raise_exception'] = raise_exception
job = json.load(sys.stdin)
template = env.from_string(job['template'])
print(json.dumps([template.render(**c) for c in job['contexts']]))
`
    const probe = spawnSync('python3', ['-c', 'import jinja2'], { encoding: 'utf8' })
    if (probe.status !== 0) {
      t.skip(
        `python3 with jinja2 is not on this machine: ${(probe.stderr || String(probe.error)).trim().split('\n').at(-1)}`,
      )
      return
    }
    const source = JSON.parse(readFileSync(path.join(out, 'tokenizer_config.json'), 'utf8')).chat_template
    const contexts = conversations.flatMap((c) => [
      { messages: c.messages, tools: c.tools.length ? c.tools : null, add_generation_prompt: false },
      {
        messages: withObjectArguments(c.messages.slice(0, -1)),
        tools: c.tools.length ? c.tools : null,
        add_generation_prompt: true,
      },
    ])
    const r = spawnSync('python3', ['-c', script], {
      input: JSON.stringify({ template: source, contexts }),
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(
      JSON.parse(r.stdout),
      contexts.map((c) => template.render(c)),
    )
  })

  it('export - a role the format does not know is refused by the template, as triad refuses it', () => {
    const messages = [{ role: 'developer', content: 'x' }] as unknown as ChatMessage[]
    assert.throws(() => renderChat(tokenizer, messages), /unknown role 'developer'/)
    assert.throws(() => template.render({ messages }), /unknown role 'developer'/)
  })
})
