import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runTriad } from '../support/triad-process.ts'

describe('bin/help-hint', () => {
  it('usage errors - a missing argument prints the error and one line naming the command help, not the help, and exits 2', async () => {
    const r = await runTriad(['export'])
    assert.equal(r.code, 2)
    assert.equal(r.stdout, '')
    assert.equal(r.stderr, "error: missing required argument 'checkpoint'\nsee `triad export --help`\n")
  })

  it('usage errors - triad eval with neither a model path nor --policy says what it needs and exits 2', async () => {
    const r = await runTriad(['eval'])
    assert.equal(r.code, 2)
    assert.equal(r.stdout, '')
    assert.equal(
      r.stderr,
      'triad: give a checkpoint or run directory to evaluate, or --policy openai:URL for a served model\n',
    )
  })

  it('usage errors - an unknown option, of a command and of a nested command', async () => {
    const run = await runTriad(['run', 'recipes/tiny.ts', '--bogus'])
    assert.equal(run.code, 2)
    assert.equal(run.stderr, "error: unknown option '--bogus'\nsee `triad run --help`\n")
    const worker = await runTriad(['env', 'worker', '--bogus'])
    assert.equal(worker.code, 2)
    assert.equal(worker.stderr, "error: unknown option '--bogus'\nsee `triad env worker --help`\n")
  })

  it('usage errors - an unknown command and a bad option value', async () => {
    const unknown = await runTriad(['bogus'])
    assert.equal(unknown.code, 2)
    assert.equal(unknown.stderr, "error: unknown command 'bogus'\nsee `triad --help`\n")
    const k = await runTriad(['eval', '/nonexistent', '--k', '0'])
    assert.equal(k.code, 2)
    assert.equal(
      k.stderr,
      "error: option '--k <n>' argument '0' is invalid. Expected an integer >= 1.\nsee `triad eval --help`\n",
    )
  })

  it('--help - still prints the whole help on stdout and exits 0', async () => {
    const r = await runTriad(['run', '--help'])
    assert.equal(r.code, 0)
    assert.match(r.stdout, /^Usage: triad run \[options\] <recipe>\n/)
    assert.equal(r.stderr, '')
    const version = await runTriad(['--version'])
    assert.equal(version.code, 0)
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n?$/)
  })
})
