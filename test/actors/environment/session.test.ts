import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type AnyTask,
  resolveInstance,
  Session,
  SessionEndedError,
  TaskRng,
  ToolArgsValidator,
} from '../../../actors/environment/index.ts'
import { calls, counterTask } from './fixtures.ts'

async function open(task: AnyTask = counterTask): Promise<Session> {
  const resolved = resolveInstance(task, { seed: 1 }, new TaskRng(0))
  return Session.open('s1', task, resolved, new ToolArgsValidator(task.tools), 0)
}

describe('actors/environment/session', () => {
  it('session - a solved episode completes with reward 1 and per-step labels', async () => {
    const s = await open()
    const a = await s.interact(calls(['add', '{"n":2}']), 1)
    assert.deepEqual(a, {
      done: false,
      reward: 0,
      status: 'running',
      messages: [{ role: 'tool', tool_call_id: 't0', content: '2' }],
      metrics: { step_good: 1, invalid: 0, tool_errors: 0, turn: 1 },
    })
    const b = await s.interact(calls(['add', '{"n":1}'], ['done', '{}']), 2)
    assert.equal(b.done, true)
    assert.equal(b.status, 'completed')
    assert.equal(b.reward, 1)
    assert.deepEqual(
      b.messages.map((m) => m.content),
      ['3', 'yes'],
    )
    assert.equal(b.metrics.success, 1)
    assert.equal(b.metrics.turns, 2)
  })

  it('session - a wrong answer completes with reward 0 and step_good 0', async () => {
    const s = await open()
    const r = await s.interact(calls(['done', '{}']), 1)
    assert.equal(r.status, 'completed')
    assert.equal(r.reward, 0)
    assert.equal(r.metrics.step_good, 0)
    assert.equal(r.metrics.success, 0)
  })

  it('session - an unknown tool is invalid_action with the tool list, and the session goes on', async () => {
    const s = await open()
    const r = await s.interact(calls(['fly', '{}']), 1)
    assert.equal(r.status, 'invalid_action')
    assert.equal(r.done, false)
    assert.equal(r.messages[0]!.content, "error: unknown tool 'fly'; tools: add, done, boom")
    assert.equal(r.metrics.invalid, 1)
    assert.equal(r.metrics.step_good, 0)
  })

  it('session - invalid actions past the allowance end the session with invalid_action', async () => {
    const s = await open()
    await s.interact(calls(['add', '{"n": "two"}']), 1)
    const r = await s.interact(calls(['add', 'not json']), 2)
    assert.equal(r.status, 'invalid_action')
    assert.equal(r.done, true)
    assert.equal(r.reward, 0)
    assert.equal(r.metrics.invalid_actions, 2)
    assert.match(r.messages[0]!.content, /arguments of 'add' are not JSON/)
  })

  it('session - arguments breaking the schema are invalid_action naming the field', async () => {
    const s = await open()
    const r = await s.interact(calls(['add', '{"n": "two"}']), 1)
    assert.equal(r.status, 'invalid_action')
    assert.equal(r.messages[0]!.content, "error: bad arguments for 'add': /n must be integer")
  })

  it('session - a message without tool calls is invalid_action', async () => {
    const s = await open()
    const r = await s.interact({ role: 'assistant', content: 'the answer is 3' }, 1)
    assert.equal(r.status, 'invalid_action')
    // No call to answer: the environment's reply is a user turn, never a tool message without its call.
    assert.deepEqual(r.messages, [
      { role: 'user', content: 'error: no tool call; call one of: add, done, boom' },
    ])
  })

  it('session - a message that is not from the assistant is invalid_action', async () => {
    const s = await open()
    const r = await s.interact({ role: 'user', content: 'hi' }, 1)
    assert.equal(r.status, 'invalid_action')
    assert.deepEqual(r.messages, [
      { role: 'user', content: 'error: send an assistant message with tool_calls' },
    ])
  })

  it('session - a task that throws ends with task_error and the message', async () => {
    const s = await open()
    const r = await s.interact(calls(['boom', '{}'], ['add', '{"n":1}']), 1)
    assert.equal(r.status, 'task_error')
    assert.equal(r.done, true)
    assert.deepEqual(
      r.messages.map((m) => m.content),
      ['error: the task failed: kaboom', 'error: not run, the episode is over'],
    )
  })

  it('session - the turn after maxTurns without an end is turn_limit', async () => {
    const s = await open()
    for (let t = 1; t < 5; t++)
      assert.equal((await s.interact(calls(['add', '{"n":1}']), t)).status, 'running')
    const r = await s.interact(calls(['add', '{"n":1}']), 5)
    assert.equal(r.status, 'turn_limit')
    assert.equal(r.done, true)
    assert.equal(r.metrics.turns, 5)
  })

  it('session - too much text ends with context_limit', async () => {
    const s = await open()
    const big = { ...calls(['add', '{"n":1}']), content: 'x'.repeat(500) }
    const r = await s.interact(big, 1)
    assert.equal(r.status, 'context_limit')
    assert.equal(r.done, true)
    assert.ok(r.metrics.context_bytes! > 400)
  })

  it('session - interact after done throws SessionEndedError naming the status', async () => {
    const s = await open()
    await s.interact(calls(['done', '{}']), 1)
    await assert.rejects(
      s.interact(calls(['done', '{}']), 2),
      (e: unknown) =>
        e instanceof SessionEndedError &&
        e.code === 'unavailable' &&
        e.message === "session 's1' already ended with status 'completed'; start a new one",
    )
  })

  it('session - cancel ends a running session with cancelled', async () => {
    const s = await open()
    await s.cancel()
    assert.equal(s.status, 'cancelled')
    await assert.rejects(s.interact(calls(['done', '{}']), 1), SessionEndedError)
  })
})
