import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import OpenAI from 'openai'
import type { TrajectoryLogRecord } from '../../actors/index.ts'
import { buildChatServer, type ChatServer } from '../../bin/serve/chat-server.ts'
import { tokenBytesOf } from '../../bin/serve/token-bytes.ts'
import { tokenLogprob, tokenText } from '../../bin/serve/token-logprobs.ts'
import { trajectoryRows } from '../../bin/trajectories/trajectory-rows.ts'
import {
  AdamW,
  createTransformer,
  disposeTransformer,
  learnTaskTokenizer,
  loadJinjaChatFormat,
  renderChat,
  Tokenizer,
  TriadChatFormat,
  trainSft,
  warmupCosine,
} from '../../gpu/index.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import {
  assertOpenAiChunk,
  assertOpenAiCompletion,
  assertOpenAiConversation,
  assertOpenAiError,
} from '../support/openai-chat-schema.ts'
import { QWEN3_TOKENIZER_DIR } from '../support/qwen3-tokenizer.ts'
import { useTestBackend } from '../support/test-backend.ts'

const MODEL = 'tiny'
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
]

/**
 * An exported episode of a run recorded before the environment answered a turn without a tool
 * call with a user message: its log holds `{"role":"tool","tool_call_id":"none"}` there.
 */
function oldRecord(): TrajectoryLogRecord {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You add numbers.' },
    { role: 'user', content: 'Add 2 and 3.' },
    { role: 'assistant', content: 'five' },
    { role: 'tool', tool_call_id: 'none', content: 'error: no tool call; call one of: add' },
  ]
  return {
    seq: 1,
    step: 1,
    group: {
      group_id: 'g-1',
      task: 'calc',
      index: 0,
      seed: 1,
      difficulty: 1,
      started_version: 0,
      samples: [
        {
          tokens: Int32Array.from([1, 2, 3]),
          loss_mask: Uint8Array.from([0, 1, 1]),
          logprobs: Float32Array.from([0, -0.5, -0.25]),
          versions: Int32Array.from([-1, 0, 0]),
          turn_starts: Int32Array.from([1]),
          reward: 0,
          status: 'invalid_action',
          turns: 1,
          metrics: { success: 0, turn: 1, turns: 1, invalid_actions: 1 },
          stale_turns: 0,
          messages,
        },
      ],
    },
  }
}

describe('triad serve: OpenAI-exact replies, and an exported conversation through the official client', () => {
  const tok = new Tokenizer()
  const format = new TriadChatFormat(tok)
  const model = createTransformer(
    { layers: 1, width: 32, heads: 2, contextLength: 512, vocabSize: tok.vocabSize },
    { seed: 2 },
  )
  const [row] = trajectoryRows('run', [oldRecord()], () => tools)
  const answer = 'Ça fait 5 ✓'
  let server: ChatServer
  let base: string
  let client: OpenAI

  before(async () => {
    await useTestBackend()
    // Fitted to the exported conversation continued by a tool call, its result and a final answer
    // with characters of 2 and 3 UTF-8 bytes (each a run of byte tokens, every one part of a
    // character): greedy decoding then replays both turns.
    const call = {
      id: 'c0',
      type: 'function' as const,
      function: { name: 'add', arguments: '{"a":2,"b":3}' },
    }
    const chat = renderChat(
      tok,
      [
        ...row!.messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', content: '5', tool_call_id: 'c0' },
        { role: 'assistant', content: answer },
      ],
      { tools },
    )
    const opt = new AdamW(model.params, { weightDecay: 0 })
    await trainSft(model, opt, [chat], {
      epochs: 100,
      schedule: warmupCosine({ peakLr: 3e-2, warmupSteps: 5, totalSteps: 100 }),
    })
    opt.dispose()
    server = buildChatServer({ model, format, name: MODEL })
    base = `${await server.app.listen({ port: 0, host: '127.0.0.1' })}/v1`
    client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0 })
  })
  after(async () => {
    await server?.close()
    disposeTransformer(model)
  })

  test('an exported row is an OpenAI conversation: the old tool message without its call is a user turn; metrics say turns once', () => {
    assertOpenAiConversation(row!.messages, row!.tools, 'row')
    assert.deepEqual(row!.messages[3], { role: 'user', content: 'error: no tool call; call one of: add' })
    assert.deepEqual(row!.metrics, { success: 0, turns: 1, invalid_actions: 1 })
  })

  /** A request through the official client, non-streaming and streaming; every reply checked. */
  const both = async (messages: ChatMessage[]) => {
    assertOpenAiConversation(messages, tools, 'request')
    const body = {
      model: MODEL,
      messages: messages as OpenAI.ChatCompletionMessageParam[],
      tools,
      temperature: 0,
      max_tokens: 60,
      logprobs: true,
      top_logprobs: 3,
    }
    const whole = await client.chat.completions.create(body)
    assertOpenAiCompletion(whole, 'completion')
    const chunks: OpenAI.ChatCompletionChunk[] = []
    const stream = await client.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    })
    for await (const ch of stream) chunks.push(assertOpenAiChunk(ch, `chunk ${chunks.length}`))
    return { whole, chunks }
  }

  test('streaming and not, with tools and logprobs: the tool call, then its answer in multi-byte text', async () => {
    const first = await both(row!.messages)
    const c = first.whole.choices[0]!
    assert.equal(c.finish_reason, 'tool_calls')
    const calls = c.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[]
    assert.deepEqual(
      calls.map((t) => t.function),
      [{ name: 'add', arguments: '{"a":2,"b":3}' }],
    )
    const streamed = first.chunks.flatMap((ch) => ch.choices[0]?.delta.tool_calls ?? [])
    assert.deepEqual(
      streamed.map((t) => [t.index, t.type, t.function]),
      [[0, 'function', { name: 'add', arguments: '{"a":2,"b":3}' }]],
    )
    assert.equal(first.chunks.at(-1)!.usage!.completion_tokens, first.whole.usage!.completion_tokens)

    // The reply goes back as the client returned it (refusal: null included), answered by id.
    const next: ChatMessage[] = [
      ...row!.messages,
      c.message as ChatMessage,
      { role: 'tool', tool_call_id: calls[0]!.id, content: '5' },
    ]
    const second = await both(next)
    const d = second.whole.choices[0]!
    assert.equal(d.finish_reason, 'stop')
    assert.equal(d.message.content, answer)
    assert.equal(d.message.tool_calls, undefined)
    // The bytes of the tokens join to the text's UTF-8; a token that is part of a character says so.
    const entries = d.logprobs!.content!
    const generated = entries.filter((e) => e.token !== '<|im_end|>')
    assert.deepEqual(Buffer.from(generated.flatMap((e) => e.bytes!)), Buffer.from(answer, 'utf8'))
    const partial = generated.filter((e) => e.bytes!.length === 1 && e.bytes![0]! >= 0x80)
    assert.equal(partial.length, Buffer.byteLength('Ç✓'))
    for (const e of partial) assert.equal(e.token, `bytes:\\x${e.bytes![0]!.toString(16)}`)
    const streamedEntries = second.chunks.flatMap((ch) => ch.choices[0]?.logprobs?.content ?? [])
    assert.deepEqual(
      streamedEntries.map((e) => [e.token, e.bytes]),
      entries.map((e) => [e.token, e.bytes]),
    )
    assert.equal(second.chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join(''), answer)
  })

  test('refusals name the parameter and say "not supported", in the OpenAI error shape, HTTP 400', async () => {
    const ask: ChatMessage[] = [{ role: 'user', content: 'hi' }]
    const post = async (patch: Record<string, unknown>) => {
      const res = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: ask, max_tokens: 2, ...patch }),
      })
      return { status: res.status, body: (await res.json()) as unknown }
    }
    const refused: [Record<string, unknown>, string, string][] = [
      [
        { stop: ['\n'] },
        'stop',
        '`stop` is not supported: a reply ends at the end of its turn or at max_tokens',
      ],
      [
        { stop: 'x' },
        'stop',
        '`stop` is not supported: a reply ends at the end of its turn or at max_tokens',
      ],
      [{ frequency_penalty: 0.5 }, 'frequency_penalty', '`frequency_penalty` is not supported (only 0)'],
      [{ presence_penalty: -1 }, 'presence_penalty', '`presence_penalty` is not supported (only 0)'],
      [{ logit_bias: { 1: 5 } }, 'logit_bias', '`logit_bias` is not supported'],
      [
        { tool_choice: 'required' },
        'tool_choice',
        "`tool_choice` is not supported: only 'auto' and 'none' (a reply calls a tool when the model writes one)",
      ],
      [
        { response_format: { type: 'json_object' } },
        'response_format',
        "`response_format` is not supported (only {type: 'text'}): no constrained decoding",
      ],
      [{ functions: [] }, 'functions', '`functions` is not supported: use tools'],
      [
        { parallel_tool_calls: false },
        'parallel_tool_calls',
        '`parallel_tool_calls` is not supported (only true): a reply carries every call the model writes',
      ],
      [
        { tools: [{ ...tools[0]!, function: { ...tools[0]!.function, strict: true } }] },
        'tools[0].function.strict',
        '`tools[0].function.strict` is not supported (only false): no constrained decoding',
      ],
      [{ frobnicate: 1 }, 'frobnicate', '`frobnicate` is not supported'],
      [
        { messages: [{ role: 'user', content: 'hi', extra: 1 }] },
        'messages[0].extra',
        '`messages[0].extra` is not supported',
      ],
    ]
    for (const [patch, param, message] of refused) {
      const r = await post(patch)
      assert.equal(r.status, 400, JSON.stringify(patch))
      const e = assertOpenAiError(r.body, JSON.stringify(patch))
      assert.deepEqual(e, {
        error: { message, type: 'invalid_request_error', param, code: 'unsupported_parameter' },
      })
    }
    // The "off" value of each is accepted.
    for (const patch of [
      { stop: null },
      { stop: [] },
      { frequency_penalty: 0, presence_penalty: null },
      { logit_bias: {} },
      { tool_choice: 'auto' },
      { response_format: { type: 'text' } },
      { parallel_tool_calls: true },
      { tools: [{ ...tools[0]!, function: { ...tools[0]!.function, strict: false } }] },
    ]) {
      const r = await post(patch)
      assert.equal(r.status, 200, `${JSON.stringify(patch)}: ${JSON.stringify(r.body)}`)
      assertOpenAiCompletion(r.body, JSON.stringify(patch))
    }
    // The official client reads the refusal as a BadRequestError naming the parameter.
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages: ask, stop: ['\n'] }),
      (e: InstanceType<typeof OpenAI.BadRequestError>) =>
        e.status === 400 && e.param === 'stop' && e.code === 'unsupported_parameter',
    )
    // Other invalid fields keep the shape too.
    const bad = await post({ temperature: 5 })
    assert.equal(bad.status, 400)
    assert.equal(assertOpenAiError(bad.body, 'temperature').error.param, 'temperature')
  })
})

describe('logprobs bytes and distinct top_logprobs', () => {
  const text = 'Ça fait 5 ✓ — 数字 😊 ok'

  test("a pretrained tokenizer's tokens: their bytes join to the text's UTF-8, partial ones included", () => {
    const qwen = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR)
    const bytesOf = tokenBytesOf(qwen)
    const ids = Array.from(qwen.encode(text))
    const joined = Buffer.concat(ids.map((id) => Buffer.from(bytesOf(id))))
    assert.deepEqual(joined, Buffer.from(text, 'utf8'))
    assert.ok(
      ids.some((id) => tokenText(bytesOf(id)).startsWith('bytes:')),
      'the emoji is split inside its UTF-8 sequence',
    )
    const end = qwen.stopTokens[0]!
    assert.deepEqual(Buffer.from(bytesOf(end)), Buffer.from('<|im_end|>'))
  })

  test("triad's tokenizer with merges: byte ids, merges and special tokens", () => {
    const tok = learnTaskTokenizer([text, text, 'fait fait fait'], 20)
    const bytesOf = tokenBytesOf(new TriadChatFormat(tok))
    const ids = Array.from(tok.encode(text))
    assert.ok(ids.some((id) => id >= tok.firstMergeId))
    assert.deepEqual(Buffer.concat(ids.map((id) => Buffer.from(bytesOf(id)))), Buffer.from(text, 'utf8'))
    assert.deepEqual(Buffer.from(bytesOf(tok.toolCallStartId)), Buffer.from('<tool_call>'))
    assert.equal(tokenText(Uint8Array.of(0xf0, 0x9f)), 'bytes:\\xf0\\x9f')
  })

  test('ids that share a text are listed once in top_logprobs, the most likely of them', () => {
    // ids 1 and 3 are both "a"; the top 3 distinct are 3 ("a", the likelier), 2, then 0.
    const texts = ['z', 'a', 'b', 'a', 'c']
    const logits = Float32Array.from([1, 2, 3, 4, 0])
    const e = tokenLogprob(logits, 2, 1, 3, (id) => Buffer.from(texts[id]!))
    assert.deepEqual(
      e.top_logprobs.map((x) => x.token),
      ['a', 'b', 'z'],
    )
    const logZ = Math.log([1, 2, 3, 4, 0].reduce((s, v) => s + Math.exp(v), 0))
    assert.ok(Math.abs(e.top_logprobs[0]!.logprob - (4 - logZ)) < 1e-6)
    assert.deepEqual(e.bytes, [0x62])
  })
})
