import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import {
  appendRunLog,
  createRunDir,
  NotARunDirError,
  openRunDir,
  RunFileExistsError,
  RunsDirError,
} from '../../../actors/index.ts'
import { ManualClock, runTimestamp, writeNewFile } from '../../../actors/testing.ts'

const T0 = Date.UTC(2026, 10, 29, 18, 21, 47, 500)
const tmp = () => mkdtempSync(join(tmpdir(), 'triad-rundir-'))

describe('actors/run/run-dir', () => {
  it('runTimestamp - is YYYYMMDD-HHMMSS in UTC', () => {
    assert.equal(runTimestamp(T0), '20261129-182147')
  })

  it('createRunDir - makes <name>-<timestamp>/ with recipe.json, metrics.jsonl, checkpoints, eval, logs', async () => {
    const runs = join(tmp(), 'runs')
    const dir = await createRunDir({
      runsDir: runs,
      name: 'quick',
      recipe: { a: 1 },
      clock: new ManualClock(T0),
    })
    assert.equal(dir.id, 'quick-20261129-182147')
    assert.equal(dir.path, join(runs, dir.id))
    assert.deepEqual(readdirSync(dir.path).sort(), [
      'checkpoints',
      'eval',
      'logs',
      'metrics.jsonl',
      'recipe.json',
    ])
    assert.deepEqual(JSON.parse(readFileSync(dir.recipeFile, 'utf8')), { a: 1 })
    assert.equal(readFileSync(dir.metricsFile, 'utf8'), '')
  })

  it('createRunDir - a second run in the same second gets a new directory; the first is untouched', async () => {
    const runs = tmp()
    const clock = new ManualClock(T0)
    const first = await createRunDir({ runsDir: runs, name: 'r', recipe: { n: 1 }, clock })
    writeFileSync(first.metricsFile, 'line\n')
    const second = await createRunDir({ runsDir: runs, name: 'r', recipe: { n: 2 }, clock })
    assert.equal(second.id, 'r-20261129-182147-2')
    assert.deepEqual(JSON.parse(readFileSync(first.recipeFile, 'utf8')), { n: 1 })
    assert.equal(readFileSync(first.metricsFile, 'utf8'), 'line\n')
  })

  it('createRunDir - a runs folder that is a file is a RunsDirError naming it; the file is untouched', async () => {
    const file = join(tmp(), 'runs')
    writeFileSync(file, 'x')
    await assert.rejects(
      createRunDir({ runsDir: file, name: 'r', recipe: {} }),
      (err: Error) =>
        err instanceof RunsDirError &&
        err.path === file &&
        err.message === `cannot make a run directory in ${file}: it is a file, not a folder`,
    )
    await assert.rejects(
      createRunDir({ runsDir: join(file, 'deeper', 'runs'), name: 'r', recipe: {} }),
      (err: Error) =>
        err instanceof RunsDirError &&
        err.message ===
          `cannot make a run directory in ${join(file, 'deeper', 'runs')}: a folder on its path is a file`,
    )
    assert.equal(readFileSync(file, 'utf8'), 'x')
  })

  it('writeNewFile - never overwrites an existing file', async () => {
    const file = join(tmp(), 'f.json')
    await writeNewFile(file, 'one')
    await assert.rejects(
      writeNewFile(file, 'two'),
      (err: Error) =>
        err instanceof RunFileExistsError &&
        err.message === `${file} already exists; triad never overwrites a run's files`,
    )
    assert.equal(readFileSync(file, 'utf8'), 'one')
    // Written through a temporary file that is linked into place and removed: nothing else is left.
    assert.deepEqual(readdirSync(dirname(file)), ['f.json'])
  })

  it('openRunDir - opens a run and returns its stored recipe', async () => {
    const dir = await createRunDir({ runsDir: tmp(), name: 'r', recipe: { x: [1, 2] } })
    const opened = await openRunDir(dir.path)
    assert.deepEqual(opened.recipe, { x: [1, 2] })
    assert.equal(opened.dir.id, dir.id)
  })

  it('openRunDir - a directory without recipe.json is not a run', async () => {
    const d = tmp()
    await assert.rejects(
      openRunDir(d),
      (err: Error) =>
        err instanceof NotARunDirError &&
        err.message === `${d} is not a triad run directory (no recipe.json)`,
    )
    assert.deepEqual(readdirSync(d), [], 'nothing was created in it')
  })

  it('openRunDir - a missing path, a file, and a corrupt recipe.json are clear errors', async () => {
    const d = tmp()
    await assert.rejects(openRunDir(join(d, 'nope')), {
      name: 'NotARunDirError',
      message: `${join(d, 'nope')} is not a triad run directory (it does not exist)`,
    })
    writeFileSync(join(d, 'file'), 'x')
    await assert.rejects(
      openRunDir(join(d, 'file')),
      /is not a triad run directory \(it is not a directory\)/,
    )
    mkdirSync(join(d, 'bad'))
    writeFileSync(join(d, 'bad', 'recipe.json'), '{"torn":')
    await assert.rejects(
      openRunDir(join(d, 'bad')),
      /bad is not a triad run directory \(recipe.json is not valid JSON\)/,
    )
  })

  it('appendRunLog - appends lines and never rewrites earlier ones', async () => {
    const dir = await createRunDir({ runsDir: tmp(), name: 'r', recipe: {} })
    await appendRunLog(dir, 'run', { event: 'start' })
    const before = statSync(join(dir.logsDir, 'run.jsonl')).size
    await appendRunLog(dir, 'run', { event: 'resume' })
    const text = readFileSync(join(dir.logsDir, 'run.jsonl'), 'utf8')
    assert.equal(text, '{"event":"start"}\n{"event":"resume"}\n')
    assert.equal(before, '{"event":"start"}\n'.length)
  })
})
