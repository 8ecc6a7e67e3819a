import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import OpenAI from 'openai'
import { InProcessTransport, startActorSystem, startPolicyEngine } from '../../../actors/index.ts'
import {
  AgentEpisodeError,
  AgentFailure,
  Gateway,
  type PolicyEngine,
  PolicyRouter,
  SESSION_HEADER,
  SegmentBreak,
  type SessionOptions,
  type TurnGenerator,
  WeightStore,
} from '../../../actors/testing.ts'
import { createRng, initWeights, Tokenizer, TriadChatFormat } from '../../../gpu/index.ts'
import type { ChatMessage, PayloadOf, PolicyGenerate } from '../../../protocols/index.ts'

/**
 * The agent gateway in front of a real (tiny, random) policy engine on an in-process transport,
 * reached by the official `openai` client and by plain `fetch`.
 */
describe('actors/gateway - the agent gateway', () => {
  const system = startActorSystem({ name: 'gateway-test' })
  const transport = new InProcessTransport()
  const run = 'gw'
  const tokenizer = new Tokenizer()
  const chat = new TriadChatFormat(tokenizer)
  const modelConfig = { layers: 1, width: 16, heads: 2, contextLength: 512, vocabSize: tokenizer.vocabSize }
  let engine: PolicyEngine
  let gateway: Gateway
  /** Every prompt the engine was sent, in order; `hold` makes generation wait until released. */
  const prompts: Int32Array[] = []
  let hold: Promise<void> | undefined
  const session = (o: Partial<SessionOptions> = {}) =>
    gateway.openSession({ task: 'calc', maxTurns: 4, maxNewTokens: 6, timeoutMs: 30_000, seed: 3, ...o })
  const client = (id: string) =>
    new OpenAI({ baseURL: gateway.baseUrlOf(id), apiKey: gateway.apiKey, maxRetries: 0 })
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const question: ChatMessage[] = [
    { role: 'system', content: 'You are a calculator.' },
    { role: 'user', content: 'What is 2+3?' },
  ]

  before(async () => {
    engine = await startPolicyEngine(system, transport, {
      run,
      id: 'fresh0',
      modelConfig,
      stale: false,
      metricsIntervalMs: 0,
      loadLatest: false,
    })
    const store = await WeightStore.open(transport, run)
    await store.publish(transport, 'policy', 1, initWeights(modelConfig, 7))
    await engine.whenVersion(1)
    const router = new PolicyRouter(transport, run, 0, createRng(1))
    const policy: TurnGenerator = {
      async generate(request: PayloadOf<typeof PolicyGenerate>, signal?: AbortSignal) {
        prompts.push(request.prompt)
        if (hold) await hold
        return router.generate(request, signal)
      },
    }
    gateway = await Gateway.start({
      policy,
      chat,
      contextLength: modelConfig.contextLength,
      sampling: { temperature: 1, top_p: 1 },
      maxInFlight: 3,
      maxSessionInFlight: 2,
    })
  })
  after(async () => {
    await gateway.close()
    await engine.stop()
    await system.stop()
    await transport.close()
  })

  it('gateway - a call through the openai client is recorded token in, token out: the prompt as rendered, the sampled ids, their logprobs and version', async () => {
    const s = session()
    const reply = await client(s.id).chat.completions.create({
      model: 'triad-policy',
      messages: question,
      logprobs: true,
    })
    const first = prompts.at(-1)!
    const expected = [...chat.render(question, []), ...chat.generationPrompt()]
    assert.deepEqual([...first], expected)
    const choice = reply.choices[0]!
    assert.equal(choice.message.role, 'assistant')
    const n = reply.usage!.completion_tokens
    assert.equal(reply.usage!.prompt_tokens, expected.length)
    assert.equal(choice.logprobs!.content!.length, n)
    await post(`/sessions/${s.id}/reward`, { reward: 1 })
    const out = await s.outcome
    assert.equal(out.trajectories.length, 1)
    const t = out.trajectories[0]!
    assert.deepEqual([...t.tokens.slice(0, expected.length)], expected)
    const sampled = [...t.loss_mask.keys()].filter((i) => t.loss_mask[i] === 1)
    assert.equal(sampled.length, n)
    assert.deepEqual(
      sampled.map((i) => t.logprobs[i]),
      choice.logprobs!.content!.map((c) => Math.fround(c.logprob)),
    )
    assert.ok(sampled.every((i) => t.versions[i] === 1))
    assert.equal(t.reward, 1)
    assert.equal(t.turns, 1)
    assert.equal(t.metrics.success, 1)
  })

  it('gateway - the agent sending back the returned assistant message extends the same segment, no re-tokenization', async () => {
    const s = session()
    const c = client(s.id)
    const r1 = await c.chat.completions.create({ model: 'm', messages: question })
    const p1 = prompts.at(-1)!
    const assistant = r1.choices[0]!.message
    const messages = [...question, assistant, { role: 'user' as const, content: 'And times 4?' }]
    await c.chat.completions.create({ model: 'm', messages })
    const p2 = prompts.at(-1)!
    await post(`/sessions/${s.id}/reward`, 0.5)
    const out = await s.outcome
    assert.equal(out.trajectories.length, 1, 'one segment')
    const t = out.trajectories[0]!
    // The second prompt is the first, the sampled ids exactly as the engine returned them, the
    // turn's close and the user turn the template's way, and a generation prompt.
    const firstSampled = [...t.tokens.slice(p1.length, p1.length + r1.usage!.completion_tokens)]
    assert.deepEqual([...p2.slice(0, p1.length)], [...p1])
    assert.deepEqual([...p2.slice(p1.length, p1.length + firstSampled.length)], firstSampled)
    assert.deepEqual([...t.tokens.slice(0, p2.length)], [...p2])
    assert.equal(t.turns, 2)
    assert.equal(t.reward, 0.5)
    assert.equal(out.messages.length, 5)
  })

  it('gateway - an edited history starts a new trained segment, each its own trajectory with the episode reward', async () => {
    const s = session()
    const c = client(s.id)
    const r1 = await c.chat.completions.create({ model: 'm', messages: question })
    const edited = { role: 'assistant' as const, content: `${r1.choices[0]!.message.content ?? ''} (edited)` }
    await c.chat.completions.create({
      model: 'm',
      messages: [...question, edited, { role: 'user', content: 'go on' }],
    })
    assert.deepEqual(
      [...prompts.at(-1)!],
      [
        ...chat.render([...question, edited, { role: 'user', content: 'go on' }], []),
        ...chat.generationPrompt(),
      ],
    )
    await post(`/sessions/${s.id}/reward`, { reward: { correct: 1, format: 0.25 } })
    const out = await s.outcome
    assert.equal(out.trajectories.length, 2)
    assert.deepEqual(
      out.trajectories.map((t) => [
        t.reward,
        t.metrics.segment,
        t.metrics.segments,
        t.metrics['reward/named/format'],
      ]),
      [
        [1.25, 0, 2, 0.25],
        [1.25, 1, 2, 0.25],
      ],
    )
    assert.equal(s.recorder.breaks[SegmentBreak.HistoryChanged], 1)
  })

  it('gateway - stream: true sends chat.completion.chunk events that the openai client assembles, and usage last', async () => {
    const s = session()
    const stream = await client(s.id).chat.completions.create({
      model: 'm',
      messages: question,
      stream: true,
      stream_options: { include_usage: true },
    })
    let text = ''
    let finish: string | null = null
    let usage: { completion_tokens: number } | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
      if (chunk.usage) usage = chunk.usage
    }
    await post(`/sessions/${s.id}/reward`, 0)
    const out = await s.outcome
    assert.equal(text, out.messages.at(-1)!.content ?? '')
    assert.ok(finish === 'stop' || finish === 'length')
    assert.equal(usage!.completion_tokens, out.generatedTokens)
  })

  it('gateway - the session header on /v1/chat/completions is the same episode as the path segment', async () => {
    const s = session()
    const r = await post(
      '/v1/chat/completions',
      { model: 'm', messages: question },
      { [SESSION_HEADER]: s.id },
    )
    assert.equal(r.status, 200)
    assert.equal(s.recorder.turns, 1)
    const missing = await post('/v1/chat/completions', { model: 'm', messages: question })
    assert.equal(missing.status, 400)
    assert.match(((await missing.json()) as { error: { message: string } }).error.message, /x-triad-session/)
    s.drop(AgentFailure.Crashed, 'test')
  })

  it('gateway - bad input: unknown session 404 naming it, after the end 409, a reward not finite 422, no key 401, another temperature 400', async () => {
    const unknown = await post('/sessions/nope-1/v1/chat/completions', { model: 'm', messages: question })
    assert.equal(unknown.status, 404)
    const e404 = (await unknown.json()) as { error: { message: string; code: string } }
    assert.equal(e404.error.code, 'session_not_found')
    assert.match(e404.error.message, /'nope-1'/)
    assert.equal((await post('/sessions/nope-1/reward', 1)).status, 404)

    const s = session()
    for (const bad of ['"1"', 'null', '1e999', '{"reward": {"a": "x"}}', '{"reward": {}}', '[1]']) {
      const r = await post(`/sessions/${s.id}/reward`, bad)
      assert.equal(r.status, 422, bad)
      assert.match(
        ((await r.json()) as { error: { message: string } }).error.message,
        /finite number|empty map/,
      )
    }
    const t = await post(`/sessions/${s.id}/v1/chat/completions`, {
      model: 'm',
      messages: question,
      temperature: 0.3,
    })
    assert.equal(t.status, 400)
    const e400 = (await t.json()) as { error: { param: string; message: string } }
    assert.equal(e400.error.param, 'temperature')
    assert.match(e400.error.message, /not supported/)
    const noKey = await fetch(`${gateway.url}/sessions/${s.id}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: question }),
    })
    assert.equal(noKey.status, 401)
    assert.equal((await post(`/sessions/${s.id}/reward`, 1)).status, 200)
    const late = await post(`/sessions/${s.id}/v1/chat/completions`, { model: 'm', messages: question })
    assert.equal(late.status, 409)
    assert.match(
      ((await late.json()) as { error: { message: string } }).error.message,
      /has ended \(rewarded\)/,
    )
    assert.equal((await post(`/sessions/${s.id}/reward`, 1)).status, 409)
  })

  it('gateway - flooding is bounded: calls past the bound get 429 with Retry-After, the admitted ones are answered', async () => {
    let release!: () => void
    hold = new Promise((r) => {
      release = r
    })
    const s = session()
    const others = [session(), session()]
    const call = (id: string) =>
      post(`/sessions/${id}/v1/chat/completions`, { model: 'm', messages: question })
    // Two in one session fill its bound; a third there is refused.
    const admitted = [call(s.id), call(s.id)]
    while (s.pending < 2) await new Promise((r) => setImmediate(r))
    const perSession = await call(s.id)
    assert.equal(perSession.status, 429)
    assert.equal(perSession.headers.get('retry-after'), '1')
    // One more elsewhere fills the gateway's bound of 3; a fourth call anywhere is refused.
    admitted.push(call(others[0]!.id))
    while (others[0]!.pending < 1) await new Promise((r) => setImmediate(r))
    const global = await call(others[1]!.id)
    assert.equal(global.status, 429)
    assert.match(((await global.json()) as { error: { message: string } }).error.message, /3 calls in flight/)
    hold = undefined
    release()
    assert.deepEqual(
      (await Promise.all(admitted)).map((r) => r.status),
      [200, 200, 200],
    )
    for (const x of [s, ...others]) x.drop(AgentFailure.Crashed, 'test')
  })

  it('gateway - an agent that never reports a reward: its episode times out and is dropped with a reason', async () => {
    const s = session({ timeoutMs: 200 })
    await client(s.id).chat.completions.create({ model: 'm', messages: question })
    await assert.rejects(s.outcome, (err: unknown) => {
      assert.ok(err instanceof AgentEpisodeError)
      assert.equal(err.failure, AgentFailure.Timeout)
      assert.match(err.message, /no reward within 0\.2 s of the episode's start \(1 calls made\)/)
      return true
    })
    const late = await post(`/sessions/${s.id}/reward`, 1)
    assert.equal(late.status, 409)
    assert.ok((gateway.metrics()['gateway/dropped/agent_timeout'] ?? 0) >= 1)
  })

  it('gateway - a call past the task turn limit is refused with 409, the episode can still be rewarded', async () => {
    const s = session({ maxTurns: 1 })
    const c = client(s.id)
    await c.chat.completions.create({ model: 'm', messages: question })
    await assert.rejects(c.chat.completions.create({ model: 'm', messages: question }), /409/)
    assert.equal((await post(`/sessions/${s.id}/reward`, 1)).status, 200)
    assert.equal((await s.outcome).turns, 1)
  })

  it('gateway - 128 agents at once, two calls and a reward each: every episode is recorded and rewarded, none lost', async () => {
    const wide = await Gateway.start({
      policy: new PolicyRouter(transport, run, 0, createRng(2)),
      chat,
      contextLength: modelConfig.contextLength,
      sampling: { temperature: 1, top_p: 1 },
    })
    try {
      const agents = Array.from({ length: 128 }, async (_, i) => {
        const s = wide.openSession({ task: 'calc', maxTurns: 4, maxNewTokens: 4, timeoutMs: 60_000, seed: i })
        const c = new OpenAI({ baseURL: wide.baseUrlOf(s.id), apiKey: wide.apiKey, maxRetries: 0 })
        const first: ChatMessage[] = [{ role: 'user', content: `agent ${i}` }]
        const r1 = await c.chat.completions.create({ model: 'm', messages: first })
        await c.chat.completions.create({
          model: 'm',
          messages: [...first, r1.choices[0]!.message, { role: 'user', content: 'again' }],
        })
        const r = await fetch(`${wide.url}/sessions/${s.id}/reward`, {
          method: 'POST',
          headers: { authorization: `Bearer ${wide.apiKey}` },
          body: String(i % 2),
        })
        assert.equal(r.status, 200)
        return s.outcome
      })
      const outcomes = await Promise.all(agents)
      assert.equal(outcomes.length, 128)
      assert.deepEqual(
        outcomes.map((o) => [o.trajectories.length, o.turns, o.trajectories[0]!.turns]),
        Array.from({ length: 128 }, () => [1, 2, 2]),
      )
      assert.deepEqual(
        outcomes.map((o) => o.reward),
        Array.from({ length: 128 }, (_, i) => i % 2),
      )
      assert.equal(wide.stats.opened, 128)
      assert.equal(wide.stats.rewarded, 128)
      assert.equal(wide.stats.calls, 256)
      assert.deepEqual(wide.stats.refused, {})
      assert.equal(wide.openSessions, 0)
      // All 128 were opened before the first call; the high-water mark keeps that after they end.
      assert.equal(wide.metrics()['gateway/peak_open_episodes'], 128)
      assert.equal(wide.metrics()['gateway/open_episodes'], 0)
    } finally {
      await wide.close()
    }
  })
})
