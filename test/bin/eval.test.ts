import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { runTriad } from '../support/triad-process.ts'

describe('bin/eval - bad input', () => {
  it('eval - a corrupt checkpoint is a clear error naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-badckpt-'))
    writeFileSync(join(dir, 'config.json'), '{not json')
    const r = await runTriad(['eval', dir, '--tasks', 'calc', '--k', '1', '--instances', '1'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, new RegExp(`cannot load checkpoint: ${join(dir, 'config.json')}: not JSON`))
  })

  it('eval - an unknown task lists the valid ones', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'chess'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /unknown task 'chess'; valid tasks: calc, code, maze, sql/)
  })

  it('eval - k below 1 is refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc', '--k', '0'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /--k must be a number >= 1, got '0'/)
  })
})
