import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  McpConnection,
  McpServerError,
  type McpServerSpec,
  McpTaskEnv,
  type McpTaskSpec,
  RolloutDriver,
} from '../../../actors/testing.ts'
import { Tokenizer } from '../../../gpu/index.ts'
import type { AssistantMessage } from '../../../protocols/index.ts'

/** The project's calc MCP server (`recipes/agents/calc-mcp-server.ts`), optionally misbehaving. */
const calcServer = (fault?: 'crash' | 'hang' | 'garbage', timeoutS = 30): McpServerSpec => ({
  command: process.execPath,
  args: ['--import', 'tsx', 'recipes/agents/calc-mcp-server.ts'],
  env: fault ? { CALC_MCP_FAULT: fault } : ({} as Record<string, string>),
  lifetime: 'episode',
  timeoutS,
})
const spec = (server = calcServer(), lifetime: 'episode' | 'pooled' = 'episode'): McpTaskSpec => ({
  servers: [{ ...server, lifetime }],
  instances: 'recipes/agents/calc-instances.jsonl',
  reward: 'recipes/agents/calc-reward.ts',
})
const callCalculator = (expression: string, id = 'call_0'): AssistantMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [
    { id, type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression }) } },
  ],
})
const start = { task: 'calc-mcp', seed: 2, split: 'train' as const }

describe('actors/mcp - MCP servers as a task environment', () => {
  const envs: McpTaskEnv[] = []
  after(async () => {
    await Promise.all(envs.map((e) => e.close()))
  })
  const envOf = (s: McpTaskSpec) => {
    const e = new McpTaskEnv('calc-mcp', s)
    envs.push(e)
    return e
  }

  it('mcp - the calc server is listed into the tool schemas, its tool answers, the answer is rewarded by the reward function', async () => {
    const env = envOf(spec())
    const session = await env.start(start)
    assert.deepEqual(
      session.tools.map((t) => t.function.name),
      ['calculator'],
    )
    assert.equal(
      session.tools[0]!.function.description,
      'Evaluate an arithmetic expression with + - * / and parentheses.',
    )
    assert.deepEqual((session.tools[0]!.function.parameters as { required: string[] }).required, [
      'expression',
    ])
    // Instance 2 of calc-instances.jsonl: "Bo has 5 beads and then has 2 times as many" (answer 10).
    assert.match(String(session.messages[0]!.content), /Bo has 5 beads/)
    const step = await env.interact(session, callCalculator('5*2'))
    assert.deepEqual(step.messages, [
      { role: 'tool', content: '10', tool_call_id: 'call_0', name: 'calculator' },
    ])
    assert.equal(step.done, false)
    const bad = await env.interact(session, {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'nope', arguments: '{}' } },
        { id: 'b', type: 'function', function: { name: 'calculator', arguments: 'not json' } },
        { id: 'c', type: 'function', function: { name: 'calculator', arguments: '{"expression": "2+"}' } },
      ],
    })
    assert.deepEqual(
      bad.messages.map((m) => m.content),
      [
        "error: no tool 'nope'; the tools are calculator",
        'error: the arguments of calculator are not a JSON object',
        'error: expected a number at 2',
      ],
    )
    const end = await env.interact(session, { role: 'assistant', content: 'Bo has 10 beads.' })
    assert.deepEqual([end.done, end.reward, end.status, end.metrics.success], [true, 1, 'completed', 1])
  })

  it('mcp - a server that crashes on a call fails the episode with its stderr tail', async () => {
    const env = envOf(spec(calcServer('crash')))
    const session = await env.start(start)
    await assert.rejects(env.interact(session, callCalculator('1+1')), (err: unknown) => {
      assert.ok(err instanceof McpServerError)
      assert.equal(err.failure, 'mcp_failed')
      assert.match(
        err.message,
        /exited; its stderr ends: calc-mcp-server: crashing as CALC_MCP_FAULT=crash asks/,
      )
      return true
    })
  })

  it('mcp - a server that hangs fails the call after its timeoutS; one that writes garbage fails as not MCP', async () => {
    const hung = await McpConnection.start(calcServer('hang', 4))
    await assert.rejects(
      hung.call('calculator', { expression: '1' }),
      /did not answer call calculator within 4 s/,
    )
    await hung.close()
    const garbage = await McpConnection.start(calcServer('garbage', 5))
    await assert.rejects(garbage.call('calculator', { expression: '1' }), /wrote something that is not MCP/)
    await garbage.close()
  })

  it('mcp - a pooled server serves one episode after another, and is started again once it failed', async () => {
    const env = envOf(spec(calcServer(), 'pooled'))
    const a = await env.start(start)
    const b = await env.start({ ...start, seed: 3 })
    assert.equal((await env.interact(a, callCalculator('2+2'))).messages[0]!.content, '4')
    assert.equal((await env.interact(b, callCalculator('3*3'))).messages[0]!.content, '9')
    await env.cancel(a)
    assert.equal(
      (await env.interact(b, callCalculator('1+0'))).messages[0]!.content,
      '1',
      'the pooled server outlives episode a',
    )
  })

  it('mcp - a server that cannot start is one failed episode counted mcp_failed, not a failed run', async () => {
    const driver = new RolloutDriver(
      'r',
      {
        env: undefined as never,
        policy: undefined as never,
        tokenizer: new Tokenizer(),
        mcp: (_task, s) => envOf(s),
      },
      {
        tasks: [
          { name: 'calc-mcp', weight: 1, mcp: spec({ ...calcServer(), command: '/nonexistent/mcp-server' }) },
        ],
        groupSize: 2,
        concurrency: 2,
        attempts: 1,
        seed: 1,
        episode: { maxTurns: 2, maxNewTokens: 4, contextLength: 512, temperature: 1, top_p: 1 },
      },
      async () => {},
      () => 0,
    )
    assert.deepEqual(await driver.runBatch(1), [])
    assert.deepEqual(driver.stats.failed, { mcp_failed: 2 })
  })
})
