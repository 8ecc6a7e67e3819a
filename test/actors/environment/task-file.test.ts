import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  isTask,
  isTaskFilePath,
  loadTaskFile,
  missingTaskFields,
  TaskFileError,
} from '../../../actors/environment/index.ts'
import { counterTask } from './fixtures.ts'

/** The source of a task object named `name` (enough of a task for the loader's shape check). */
const taskSource = (name: string) =>
  `{ name: '${name}', description: 'd', tools: [], limits: {}, difficulty: { min: 1, max: 1, default: 1 },
     generate: () => ({}), key: () => 'k', open: () => ({ messages: [], call: () => ({ content: '', good: true }) }),
     expert: () => ({ act: async () => ({ role: 'assistant', content: '' }) }) }`

describe('actors/environment/task-file', () => {
  let dir: string
  const write = (name: string, source: string) => {
    const file = join(dir, name)
    writeFileSync(file, source)
    return file
  }
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'triad-task-file-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** Asserts that loading `file` fails with a TaskFileError whose message is `message`. */
  const rejects = (file: string, message: string) =>
    assert.rejects(
      loadTaskFile(file),
      (err: unknown) => err instanceof TaskFileError && err.file === file && err.message === message,
    )

  it('task-file - isTaskFilePath: a module extension or a path separator is a file, a bare word a name', () => {
    for (const arg of ['echo.ts', 'mytasks/echo.ts', './echo', '/abs/echo.mjs', 'echo.js', 'echo.cjs'])
      assert.equal(isTaskFilePath(arg), true, arg)
    for (const arg of ['calc', 'echo', 'my-task']) assert.equal(isTaskFilePath(arg), false, arg)
  })

  it('task-file - isTask and missingTaskFields check every field of a task', () => {
    assert.equal(isTask(counterTask), true)
    assert.deepEqual(missingTaskFields(counterTask), [])
    assert.deepEqual(missingTaskFields({ ...counterTask, tools: {}, expert: undefined, name: '' }), [
      'name',
      'tools',
      'expert',
    ])
    assert.equal(missingTaskFields(null).length, 9)
  })

  it('task-file - the only exported task is loaded, and a default export wins over named ones', async () => {
    const only = await loadTaskFile(
      write('only.mjs', `export const a = ${taskSource('a')}\nexport const n = 1\n`),
    )
    assert.equal(only.name, 'a')
    const both = await loadTaskFile(
      write('both.mjs', `export const a = ${taskSource('a')}\nexport default ${taskSource('b')}\n`),
    )
    assert.equal(both.name, 'b')
  })

  it('task-file - a CommonJS file is loaded from its module.exports', async () => {
    const task = await loadTaskFile(write('common.cjs', `module.exports = { c: ${taskSource('c')} }\n`))
    assert.equal(task.name, 'c')
  })

  it('task-file - a missing file, a folder, a failing import, no task and several tasks are errors that say which', async () => {
    await rejects(join(dir, 'nope.ts'), `cannot load task file ${join(dir, 'nope.ts')}: no such file`)
    const folder = join(dir, 'folder.ts')
    mkdirSync(folder)
    await rejects(folder, `cannot load task file ${folder}: not a file`)
    const throwing = write('throwing.mjs', "throw new Error('boom')\n")
    await rejects(throwing, `cannot load task file ${throwing}: importing it failed: boom`)
    const none = write('none.mjs', 'export default { name: 1, tools: [] }\n')
    await rejects(
      none,
      `cannot load task file ${none}: it exports no task (its default export lacks: name, description, limits, difficulty, generate, key, open, expert); ` +
        'a task is an object with name, description, tools, limits, difficulty, generate, key, open, expert (actors/environment/task.ts)',
    )
    const several = write(
      'several.mjs',
      `export const a = ${taskSource('a')}\nexport const b = ${taskSource('b')}\n`,
    )
    await rejects(
      several,
      `cannot load task file ${several}: it exports several tasks (a, b); make the one to try the default export`,
    )
  })
})
