import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { OpenAIPolicy, PolicyEndpointError, playEpisode } from '../../../actors/index.ts'
import { calc, chatCompletionsUrl } from '../../../actors/testing.ts'
import { runTriad } from '../../support/triad-process.ts'

// A tiny local HTTP server that stands in for a real LLM endpoint (vLLM, OpenAI ...): it speaks
// the chat-completions wire format and answers with a scripted tool call per turn.
describe('actors/environment/openai-policy - against a fake OpenAI-compatible endpoint', () => {
  let server: Server
  let url: string
  const seen: {
    messages: { role: string; content: string | null }[]
    tools: { function: { name: string } }[]
    model: string
  }[] = []

  before(async () => {
    server = createServer((req, res) => {
      let body = ''
      req.on('data', (d) => {
        body += d
      })
      req.on('end', () => {
        if (req.url === '/broken/chat/completions') {
          res.writeHead(500).end('overloaded')
          return
        }
        const r = JSON.parse(body)
        seen.push(r)
        const last = r.messages[r.messages.length - 1]
        const toolCall =
          last.role === 'tool'
            ? {
                id: 'b',
                type: 'function',
                function: { name: 'submit', arguments: JSON.stringify({ answer: Number(last.content) }) },
              }
            : // Some servers send arguments as an object: the client turns them into a JSON string.
              {
                id: 'a',
                type: 'function',
                function: { name: 'calculator', arguments: { expression: '2*3' } },
              }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            choices: [{ index: 0, message: { role: 'assistant', content: 'Plan.', tool_calls: [toolCall] } }],
          }),
        )
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  })

  after(() => new Promise<void>((r) => server.close(() => r())))

  it('openai-policy - the URL gets /chat/completions once', () => {
    assert.equal(chatCompletionsUrl('http://h/v1/'), 'http://h/v1/chat/completions')
    assert.equal(chatCompletionsUrl('http://h/v1/chat/completions'), 'http://h/v1/chat/completions')
  })

  it('openai-policy - drives a task: sends messages and full tool schemas, reads tool calls back', async () => {
    seen.length = 0
    const t = await playEpisode(calc, { seed: 1 }, new OpenAIPolicy({ url, model: 'fake-1' }))
    assert.equal(t.status, 'completed')
    assert.equal(t.messages.length, 6)
    assert.equal(seen.length, 2)
    assert.equal(seen[0]!.model, 'fake-1')
    assert.deepEqual(
      seen[0]!.tools.map((x) => x.function.name),
      ['calculator', 'submit'],
    )
    assert.deepEqual(
      seen[0]!.messages.map((m) => m.role),
      ['system', 'user'],
    )
    assert.deepEqual(
      seen[1]!.messages.slice(2).map((m) => [m.role, m.content]),
      [
        ['assistant', 'Plan.'],
        ['tool', '6'],
      ],
    )
    const call = t.messages[2]!
    assert.ok(call.role === 'assistant' && call.tool_calls![0]!.function.arguments === '{"expression":"2*3"}')
  })

  it('openai-policy - an HTTP error is a PolicyEndpointError with the status', async () => {
    const p = new OpenAIPolicy({ url: url.replace('/v1', '/broken'), model: 'm' })
    await assert.rejects(
      p.act([{ role: 'user', content: 'x' }], []),
      (e: unknown) =>
        e instanceof PolicyEndpointError && e.status === 500 && /HTTP 500: overloaded/.test(e.message),
    )
  })

  it('openai-policy - an endpoint that does not answer is a PolicyEndpointError', async () => {
    const p = new OpenAIPolicy({ url: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 })
    await assert.rejects(
      p.act([{ role: 'user', content: 'x' }], []),
      (e: unknown) => e instanceof PolicyEndpointError && /request failed/.test(e.message),
    )
  })

  it('env try - prints one trajectory readably with the expert and with an endpoint', async () => {
    const expert = await runTriad(['env', 'try', 'calc', '--seed', '2', '--difficulty', '1'])
    assert.equal(expert.code, 0, expert.stderr)
    assert.match(expert.stdout, /^# calc difficulty 1 train seed 2\nsystem: /)
    assert.match(expert.stdout, / {2}-> calculator\(\{"expression":"/)
    assert.match(expert.stdout, /= completed, reward 1, turns \d+, step_good 1+, \d+ bytes/)
    const llm = await runTriad(['env', 'try', 'calc', '--policy', `openai:${url}`, '--seed', '2'])
    assert.equal(llm.code, 0, llm.stderr)
    assert.match(llm.stdout, /assistant: Plan\.\n {2}-> calculator\(\{"expression":"2\*3"\}\)\n {2}<- 6\n/)
    const bad = await runTriad(['env', 'try', 'chess'])
    assert.equal(bad.code, 2) // an unknown task is a usage error
    assert.match(bad.stderr, /unknown task 'chess'; valid tasks: calc, code, maze, sql/)
  })
})
