import assert from 'node:assert/strict'
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import OpenAI from 'openai'
import { buildChatServer, type ChatServer } from '../../bin/serve/chat-server.ts'
import {
  AdamW,
  createTransformer,
  disposeTransformer,
  generate,
  loadCheckpoint,
  loadJinjaChatFormat,
  renderChat,
  Tokenizer,
  TriadChatFormat,
  trainSft,
  warmupCosine,
} from '../../gpu/index.ts'
import type { LoadedCheckpoint } from '../../gpu/testing.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { writeHfCheckpoint } from '../support/hf-checkpoint.ts'
import {
  assertOpenAiChunk,
  assertOpenAiCompletion,
  assertOpenAiError,
} from '../support/openai-chat-schema.ts'
import { QWEN3_TOKENIZER_DIR } from '../support/qwen3-tokenizer.ts'
import { useTestBackend } from '../support/test-backend.ts'
import { writeTinyCheckpoint } from '../support/tiny-checkpoint.ts'
import { runTriad, startTriad } from '../support/triad-process.ts'
import { within } from '../support/within.ts'

const MODEL = 'tiny'
const messages: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'What is 2+3?' },
]
const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'adds two numbers',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    },
  },
]

describe('triad serve: OpenAI-compatible chat server', () => {
  let dir: string
  let ckpt: LoadedCheckpoint
  let format: TriadChatFormat
  let server: ChatServer
  let base: string
  let client: OpenAI

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'triad-serve-'))
    await writeTinyCheckpoint(join(dir, 'ckpt'), 1, 2048)
    await useTestBackend()
    ckpt = await loadCheckpoint(join(dir, 'ckpt'))
    format = new TriadChatFormat(ckpt.tokenizer)
    server = buildChatServer({ model: ckpt.model, format, name: MODEL, bodyLimit: 2 ** 20 })
    base = `${await server.app.listen({ port: 0, host: '127.0.0.1' })}/v1`
    client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0 })
  })
  after(async () => {
    await server?.close()
    if (ckpt) disposeTransformer(ckpt.model)
    await rm(dir, { recursive: true, force: true })
  })

  const promptIds = (m: readonly ChatMessage[], t: readonly ToolSchema[] = []) => {
    const r = format.render(m, t)
    return [...r, ...format.generationPrompt()]
  }

  test('GET /v1/models lists the served model; an unknown one is 404 model_not_found', async () => {
    const list = await client.models.list()
    assert.deepEqual(
      list.data.map((m) => [m.id, m.object, m.owned_by]),
      [[MODEL, 'model', 'triad']],
    )
    assert.equal((await client.models.retrieve(MODEL)).id, MODEL)
    await assert.rejects(client.models.retrieve('other'), (e: InstanceType<typeof OpenAI.NotFoundError>) => {
      assert.equal(e.status, 404)
      assert.equal((e.error as { code: string }).code, 'model_not_found')
      return true
    })
  })

  test('a greedy completion is what gpu generate gives for the rendered prompt', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 12 })
    assertOpenAiCompletion(r, 'greedy')
    const prompt = promptIds(messages)
    const [g] = await generate(ckpt.model, [prompt], {
      maxNewTokens: 12,
      temperature: 0,
      stopTokens: format.stopTokens,
    })
    const ids = Array.from(g!.tokens).filter((t) => !format.stopTokens.includes(t))
    assert.equal(r.object, 'chat.completion')
    assert.equal(r.model, MODEL)
    assert.equal(r.choices.length, 1)
    assert.equal(r.choices[0]!.message.role, 'assistant')
    assert.equal(r.choices[0]!.message.content, format.decode(ids))
    assert.equal(r.choices[0]!.finish_reason, g!.finishReason)
    assert.equal(r.choices[0]!.logprobs, null)
    assert.deepEqual(r.usage, {
      prompt_tokens: prompt.length,
      completion_tokens: g!.tokens.length,
      total_tokens: prompt.length + g!.tokens.length,
    })
  })

  test('seeded sampling with n = 2 repeats exactly; concurrent requests share decode passes', async () => {
    const ask = () =>
      client.chat.completions.create({
        model: MODEL,
        messages,
        temperature: 1,
        seed: 5,
        n: 2,
        max_tokens: 16,
      })
    const before = server.batcher.stats()
    const [a, b] = await Promise.all([ask(), ask()])
    const after = server.batcher.stats()
    assertOpenAiCompletion(a, 'n = 2')
    assert.equal(a.choices.length, 2)
    assert.deepEqual(
      a.choices.map((c) => c.message.content),
      b.choices.map((c) => c.message.content),
    )
    // choice 1 uses seed 6: a different stream of draws than choice 0's
    assert.notEqual(a.choices[0]!.message.content, a.choices[1]!.message.content)
    assert.equal(after.submitted - before.submitted, 4)
    // four sequences of up to 16 tokens in fewer decode passes than one pass per token per sequence
    assert.ok(
      after.batchRows - before.batchRows > after.decodeSteps - before.decodeSteps,
      `mean batch above 1: ${after.batchRows - before.batchRows} rows in ${after.decodeSteps - before.decodeSteps} passes`,
    )
  })

  test('logprobs with top_logprobs: greedy tokens are the top alternative, texts join to the content', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages,
      temperature: 0,
      max_tokens: 10,
      logprobs: true,
      top_logprobs: 3,
    })
    assertOpenAiCompletion(r, 'logprobs')
    const c = r.choices[0]!
    const entries = c.logprobs!.content!
    assert.ok(entries.length > 0)
    // Each token's raw bytes: together the content's UTF-8.
    assert.deepEqual(Buffer.from(entries.flatMap((e) => e.bytes!)), Buffer.from(c.message.content!, 'utf8'))
    const [g] = await generate(ckpt.model, [promptIds(messages)], {
      maxNewTokens: 10,
      temperature: 0,
      stopTokens: format.stopTokens,
    })
    for (const [i, e] of entries.entries()) {
      assert.equal(e.top_logprobs.length, 3)
      assert.equal(e.top_logprobs[0]!.token, e.token)
      assert.equal(e.top_logprobs[0]!.logprob, e.logprob)
      assert.ok(e.top_logprobs[0]!.logprob >= e.top_logprobs[1]!.logprob)
      assert.ok(e.top_logprobs[1]!.logprob >= e.top_logprobs[2]!.logprob)
      // the sampler's greedy logprob is the same log softmax at temperature 1
      assert.ok(Math.abs(e.logprob - g!.logprobs[i]!) < 1e-4, `token ${i}: ${e.logprob} vs ${g!.logprobs[i]}`)
    }
  })

  test('tools and tool history render into the prompt; a reply without a tool call has no tool_calls', async () => {
    const history: ChatMessage[] = [
      ...messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '5' },
    ]
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: history as OpenAI.ChatCompletionMessageParam[],
      tools,
      temperature: 0,
      max_tokens: 8,
    })
    assertOpenAiCompletion(r, 'tool history')
    assert.equal(r.usage!.prompt_tokens, promptIds(history, tools).length)
    const c = r.choices[0]!
    assert.ok(!c.message.content!.includes('<tool_call>'), c.message.content!)
    assert.equal(c.message.tool_calls, undefined)
    assert.ok(c.finish_reason === 'stop' || c.finish_reason === 'length')
  })

  test('streaming chunks join to the non-streaming text at temperature 0 and end with usage', async () => {
    const body = { model: MODEL, messages, temperature: 0, max_tokens: 24, logprobs: true } as const
    const whole = await client.chat.completions.create(body)
    const stream = await client.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const ch of stream) chunks.push(assertOpenAiChunk(ch, `chunk ${chunks.length}`))
    assertOpenAiCompletion(whole, 'whole')
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant')
    assert.ok(chunks.every((ch) => ch.object === 'chat.completion.chunk' && ch.id === chunks[0]!.id))
    const text = chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join('')
    assert.equal(text, whole.choices[0]!.message.content)
    const lps = chunks.flatMap((ch) => ch.choices[0]?.logprobs?.content ?? [])
    assert.deepEqual(lps, whole.choices[0]!.logprobs!.content)
    const finishes = chunks.map((ch) => ch.choices[0]?.finish_reason).filter((f) => f)
    assert.deepEqual(finishes, [whole.choices[0]!.finish_reason])
    const last = chunks[chunks.length - 1]!
    assert.deepEqual(last.choices, [])
    assert.deepEqual(last.usage, whole.usage)
  })

  test('invalid fields are 400 naming the param', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ temperature: 5 }, 'temperature'],
      [{ top_p: 0 }, 'top_p'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ n: 99 }, 'n'],
      [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'hi' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: 7 }] }, 'messages[0].content'],
      [{ stop: ['\n'] }, 'stop'],
      [{ frequency_penalty: 0.5 }, 'frequency_penalty'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ logit_bias: { 1: 5 } }, 'logit_bias'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
    ]
    for (const [patch, param] of cases) {
      const res = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages, ...patch }),
      })
      const json = assertOpenAiError(await res.json(), JSON.stringify(patch))
      assert.equal(res.status, 400, JSON.stringify(patch))
      assert.equal(json.error.type, 'invalid_request_error')
      assert.equal(json.error.param, param, `${JSON.stringify(patch)}: ${json.error.message}`)
      assert.ok(!json.error.message.includes('\n'), json.error.message)
    }
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages, temperature: 5 }),
      (e: InstanceType<typeof OpenAI.BadRequestError>) => e.status === 400 && e.param === 'temperature',
    )
  })

  test('unknown model and route are 404; too long a prompt is 400 context_length_exceeded', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-9', messages }),
      (e: InstanceType<typeof OpenAI.NotFoundError>) =>
        e.status === 404 && e.param === 'model' && e.code === 'model_not_found',
    )
    const res = await fetch(`${base}/completions`, { method: 'POST', body: '{}' })
    assert.equal(res.status, 404)
    assert.equal(assertOpenAiError(await res.json(), 'no route').error.type, 'not_found_error')
    await assert.rejects(
      client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'x'.repeat(3000) }],
      }),
      (e: InstanceType<typeof OpenAI.BadRequestError>) =>
        e.status === 400 && e.param === 'messages' && e.code === 'context_length_exceeded',
    )
  })

  test('bad JSON is 400, a non-JSON body 415, too large a body 413, an unrenderable tool call 422', async () => {
    const post = async (body: string, type = 'application/json') => {
      const res = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      })
      const json = await res.json()
      return {
        status: res.status,
        error: assertOpenAiError(json, `${res.status} ${body.slice(0, 40)}`).error,
      }
    }
    const bad = await post('{"model": ')
    assert.equal(bad.status, 400)
    assert.equal(bad.error.type, 'invalid_request_error')
    assert.equal((await post('hello', 'text/plain')).status, 415)
    const big = await post(
      JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(2 ** 21) }] }),
    )
    assert.equal(big.status, 413)
    const unrenderable = await post(
      JSON.stringify({
        model: MODEL,
        messages: [
          ...messages,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'add', arguments: 'not json' } }],
          },
        ],
      }),
    )
    assert.equal(unrenderable.status, 422)
    assert.equal(unrenderable.error.param, 'messages[2]')
    assert.deepEqual(Object.keys(unrenderable.error).sort(), ['code', 'message', 'param', 'type'])
  })
})

describe('triad serve: a model that answers with a tool call', () => {
  // A tiny model fitted (SFT) to one conversation whose assistant turn calls `add`: greedy decoding
  // then emits that call, so the server's tool_calls path meets a real model's output.
  const ask: ChatMessage[] = [{ role: 'user', content: 'Add 2 and 3.' }]
  let server: ChatServer
  let client: OpenAI
  const tok = new Tokenizer()
  const model = createTransformer(
    { layers: 1, width: 32, heads: 2, contextLength: 512, vocabSize: tok.vocabSize },
    { seed: 1 },
  )

  before(async () => {
    await useTestBackend()
    const call = {
      id: 'c0',
      type: 'function' as const,
      function: { name: 'add', arguments: '{"a":2,"b":3}' },
    }
    const chat = renderChat(tok, [...ask, { role: 'assistant', content: null, tool_calls: [call] }], {
      tools,
    })
    const opt = new AdamW(model.params, { weightDecay: 0 })
    await trainSft(model, opt, [chat], {
      epochs: 80,
      schedule: warmupCosine({ peakLr: 3e-2, warmupSteps: 5, totalSteps: 80 }),
    })
    opt.dispose()
    server = buildChatServer({ model, format: new TriadChatFormat(tok), name: MODEL })
    const base = `${await server.app.listen({ port: 0, host: '127.0.0.1' })}/v1`
    client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0 })
  })
  after(async () => {
    await server?.close()
    disposeTransformer(model)
  })

  test('the reply carries tool_calls and finish_reason tool_calls, streamed as a tool_calls delta', async () => {
    const body = { model: MODEL, messages: ask, tools, temperature: 0, max_tokens: 60 } as const
    const r = await client.chat.completions.create(body)
    assertOpenAiCompletion(r, 'tool call')
    const c = r.choices[0]!
    assert.equal(c.finish_reason, 'tool_calls')
    assert.equal(c.message.content, null)
    const calls = c.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[]
    assert.equal(calls.length, 1)
    assert.equal(calls[0]!.type, 'function')
    assert.deepEqual(calls[0]!.function, { name: 'add', arguments: '{"a":2,"b":3}' })
    assert.match(calls[0]!.id, /^call_[0-9a-f]{24}_0$/)
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const ch of await client.chat.completions.create({ ...body, stream: true })) chunks.push(ch)
    assert.equal(chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join(''), '')
    const deltas = chunks.flatMap((ch) => ch.choices[0]?.delta.tool_calls ?? [])
    assert.equal(deltas.length, 1)
    assert.equal(deltas[0]!.index, 0)
    assert.deepEqual(deltas[0]!.function, { name: 'add', arguments: '{"a":2,"b":3}' })
    assert.deepEqual(
      chunks.map((ch) => ch.choices[0]?.finish_reason).filter((f) => f),
      ['tool_calls'],
    )
    // tool_choice "none": no tools offered, so the same text is plain content
    const none = await client.chat.completions.create({ ...body, tool_choice: 'none' })
    assert.equal(none.choices[0]!.message.tool_calls, undefined)
    assert.equal(typeof none.choices[0]!.message.content, 'string')
    // where the untrained no-tools text ends is the model's: EOS or the 60-token budget
    assert.ok(
      ['stop', 'length'].includes(none.choices[0]!.finish_reason),
      `finish_reason ${none.choices[0]!.finish_reason}`,
    )
  })
})

describe('triad serve (the command)', () => {
  test('env try --policy openai: plays the served checkpoint to an end status', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'triad-serve-cli-'))
    const ckpt = join(dir, 'step-1')
    await writeTinyCheckpoint(ckpt, 1, 2048)
    const p = startTriad(['serve', ckpt, '--port', '0', '--served-model-name', 'mine'])
    try {
      const m = await p.waitForText(/^serving mine at (http:\/\/127\.0\.0\.1:\d+)\/v1$/, 60_000)
      const out = await within(
        runTriad(['env', 'try', 'calc', '--policy', `openai:${m[1]}/v1`, '--model', 'mine', '--json']),
        120_000,
        'env try against triad serve',
      )
      assert.equal(out.code, 0, out.stderr)
      const t = JSON.parse(out.stdout) as { status: string; messages: ChatMessage[] }
      assert.ok(
        ['completed', 'invalid_action', 'turn_limit', 'context_limit'].includes(t.status),
        `status ${t.status}`,
      )
      assert.ok(t.messages.some((x) => x.role === 'assistant'))
      const wrong = await runTriad([
        'env',
        'try',
        'calc',
        '--policy',
        `openai:${m[1]}/v1`,
        '--model',
        'other',
      ])
      assert.notEqual(wrong.code, 0)
      assert.match(wrong.stderr, /HTTP 404.*model_not_found/)
    } finally {
      await p.kill('SIGTERM')
      await rm(dir, { recursive: true, force: true })
    }
    assert.equal((await p.exited).code, 143)
  })

  test('a Hugging Face directory is served with its own chat template', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'triad-serve-hf-'))
    const qwen = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR)
    await writeHfCheckpoint(dir, {
      architecture: 'Qwen3ForCausalLM',
      hidden_size: 16,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 8,
      intermediate_size: 32,
      vocab_size: qwen.vocabSize,
      max_position_embeddings: 4096,
      rope_theta: 1000000,
      rms_norm_eps: 1e-6,
      tie_word_embeddings: true,
    })
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      await copyFile(join(QWEN3_TOKENIZER_DIR, f), join(dir, f))
    const p = startTriad(['serve', dir, '--port', '0', '--served-model-name', 'qwen-tiny'])
    try {
      const m = await p.waitForText(/^serving qwen-tiny at (http:\/\/127\.0\.0\.1:\d+)\/v1$/, 90_000)
      const client = new OpenAI({ baseURL: `${m[1]}/v1`, apiKey: 'unused', maxRetries: 0 })
      const body = { model: 'qwen-tiny', messages, temperature: 0, max_tokens: 6 } as const
      const r = await client.chat.completions.create({ ...body, logprobs: true, top_logprobs: 5 })
      assertOpenAiCompletion(r, 'qwen')
      // The tokens' raw bytes (Qwen's byte-level vocabulary) decode to the content.
      const bytes = r.choices[0]!.logprobs!.content!.flatMap((e) => e.bytes!)
      assert.equal(new TextDecoder().decode(Uint8Array.from(bytes)), r.choices[0]!.message.content)
      const prompt = [...qwen.render(messages, []), ...qwen.generationPrompt()]
      assert.equal(r.usage!.prompt_tokens, prompt.length)
      assert.ok(r.usage!.completion_tokens >= 1 && r.usage!.completion_tokens <= 6)
      assert.equal(typeof r.choices[0]!.message.content, 'string')
      const chunks: OpenAI.ChatCompletionChunk[] = []
      for await (const ch of await client.chat.completions.create({ ...body, stream: true })) chunks.push(ch)
      assert.equal(
        chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join(''),
        r.choices[0]!.message.content,
      )
    } finally {
      await p.kill('SIGTERM')
      await rm(dir, { recursive: true, force: true })
    }
  })

  test('a path that is no checkpoint is refused in one line', async () => {
    const out = await runTriad(['serve', '/nonexistent/model', '--port', '0'])
    // Neither a checkpoint nor a run directory: a usage error (README, exit statuses).
    assert.equal(out.code, 2)
    assert.match(out.stderr, /^triad: \/nonexistent\/model is neither a model directory/)
    assert.equal(out.stderr.trim().split('\n').length, 1)
  })
})
