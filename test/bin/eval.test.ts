import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir } from '../../actors/index.ts'
import { writeTinyCheckpoint } from '../support/tiny-checkpoint.ts'
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

  it('eval - --name, --step and --title without --run are refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc', '--step', '3'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /--name, --step and --title describe the file written with --run: give --run too/)
  })

  it('eval - a bad level in --tasks is refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc:x'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /--difficulty must be a number >= 0, got 'x'/)
  })
})

describe('bin/eval - into a run directory', () => {
  it('eval - --run with --name, --step, --title and per-task levels writes eval/<name>.json', async () => {
    const checkpoint = mkdtempSync(join(tmpdir(), 'triad-evalckpt-'))
    await writeTinyCheckpoint(checkpoint)
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
      name: 'ev',
      recipe: {},
    })
    const r = await runTriad([
      'eval',
      checkpoint,
      '--run',
      run.path,
      '--name',
      'step-000007',
      '--step',
      '7',
      '--title',
      'held-out evaluation at step 7',
      '--tasks',
      'calc:2,maze:1',
      '--k',
      '1',
      '--instances',
      '1',
      '--max-new-tokens',
      '4',
      '--backend',
      'wasm',
    ])
    assert.equal(r.code, 0, r.stderr)
    const file = JSON.parse(readFileSync(join(run.evalDir, 'step-000007.json'), 'utf8'))
    assert.equal(file.title, 'held-out evaluation at step 7')
    assert.equal(file.step, 7)
    assert.equal(file.k, 1)
    assert.equal(file.checkpoint, checkpoint)
    assert.deepEqual(
      file.rows.map((row: { task: string; difficulty: number; n: number }) => [
        row.task,
        row.difficulty,
        row.n,
      ]),
      [
        ['calc', 2, 1],
        ['maze', 1, 1],
      ],
    )
  })
})
