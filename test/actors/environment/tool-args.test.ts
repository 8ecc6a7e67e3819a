import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ToolArgsValidator, ToolCallProblem } from '../../../actors/environment/index.ts'
import { counterTask } from './fixtures.ts'

const v = new ToolArgsValidator(counterTask.tools)
const call = (name: string, args: string) => ({
  id: 'x',
  type: 'function' as const,
  function: { name, arguments: args },
})

describe('actors/environment/tool-args', () => {
  it('tool-args - valid arguments parse to an object', () => {
    assert.deepEqual(v.check(call('add', '{"n": 2}')), { ok: true, name: 'add', args: { n: 2 } })
  })

  it('tool-args - an empty arguments string means no arguments', () => {
    assert.deepEqual(v.check(call('done', '')), { ok: true, name: 'done', args: {} })
  })

  it('tool-args - an unknown tool lists the tools', () => {
    const r = v.check(call('fly', '{}'))
    assert.equal(r.ok, false)
    assert.ok(!r.ok && r.problem === ToolCallProblem.UnknownTool)
    assert.ok(!r.ok && r.message === "error: unknown tool 'fly'; tools: add, done, boom")
  })

  it('tool-args - arguments that are not JSON are refused with the parse error', () => {
    const r = v.check(call('add', '{n: 2'))
    assert.ok(!r.ok && r.problem === ToolCallProblem.NotJson && /not JSON/.test(r.message))
  })

  it('tool-args - arguments breaking the schema name the field and the rule', () => {
    const r = v.check(call('add', '{"n": 0, "m": 1}'))
    assert.ok(!r.ok && r.problem === ToolCallProblem.SchemaMismatch)
    assert.ok(
      !r.ok && /\/n must be >= 1/.test(r.message) && /additional properties/.test(r.message),
      !r.ok ? r.message : '',
    )
  })

  it('tool-args - a JSON array is not an arguments object', () => {
    const r = v.check(call('add', '[1]'))
    assert.ok(!r.ok && r.problem === ToolCallProblem.SchemaMismatch && /must be object/.test(r.message))
  })
})
