import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { getTask } from '../../actors/index.ts'
import { tryDifficulty } from '../../bin/commands/env.ts'
import { CliError } from '../../bin/errors.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin/env', () => {
  it("tryDifficulty - a level outside the task's levels names the option, the value and the levels", () => {
    const calc = getTask('calc')
    assert.equal(tryDifficulty(calc, undefined), undefined)
    assert.equal(tryDifficulty(calc, 7), 7)
    for (const level of [0, 8])
      assert.throws(
        () => tryDifficulty(calc, level),
        (err: Error) =>
          err instanceof CliError &&
          err.message ===
            `option '--difficulty <d>' argument '${level}' is invalid: task 'calc' has levels 1..7`,
      )
  })

  it('env try - a too-high difficulty is reported once, on one line', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--difficulty', '99'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      "triad: option '--difficulty <d>' argument '99' is invalid: task 'calc' has levels 1..7\n",
    )
    assert.equal(r.stdout, '')
  })

  it('env try - a level within the range plays the episode at that level', async () => {
    const r = await runTriad([
      'env',
      'try',
      'calc',
      '--difficulty',
      '3',
      '--seed',
      '4',
      '--error-rate',
      '0',
      '--json',
    ])
    assert.equal(r.code, 0, r.stderr)
    const t = JSON.parse(r.stdout) as { task: string; difficulty: number }
    assert.equal(t.task, 'calc')
    assert.equal(t.difficulty, 3)
  })

  it('env try - a task file that does not exist is reported on one line, naming it', async () => {
    const r = await runTriad(['env', 'try', 'mytasks/missing.ts'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, 'triad: cannot load task file mytasks/missing.ts: no such file\n')
    assert.equal(r.stdout, '')
  })

  it('env try - a split other than train or eval is refused', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--split', 'test'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, "triad: option '--split <split>' argument 'test' is invalid: use train or eval\n")
  })
})
