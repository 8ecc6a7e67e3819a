import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type AnyTask, taskRegistry } from '../actors/index.ts'
import { defineRecipe, RecipeError, resolveTasks, taskCatalogOf } from '../recipes/index.ts'
import { runTriad } from './support/triad-process.ts'

/**
 * The README's "Writing a task" example, taken from README.md itself (so the document cannot
 * drift from what works), put where the README tells a user to put it: a folder inside the clone.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const readme = readFileSync(join(root, 'README.md'), 'utf8')

/** The first TypeScript block of the README's "Writing a task" section. */
function taskExample(text: string): string {
  const section = text.slice(text.indexOf('## Writing a task'))
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  assert.ok(block, 'README.md has a ```ts block under "## Writing a task"')
  return block[1]!
}

/** The example with its generator cut to the three words alone, whose keys all hash to train. */
function threeWords(example: string): string {
  const generate = /^ {2}generate: .*$/m
  assert.match(example, generate)
  return example.replace(generate, "  generate: (rng) => ({ word: rng.pick(['red', 'green', 'blue']) }),")
}

/** Runs `tsc --noEmit -p project`; resolves with its exit code and output. */
function typecheck(project: string): Promise<{ code: number | null; output: string }> {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const child = spawn(process.execPath, [tsc, '--noEmit', '-p', project], { cwd: root })
  let output = ''
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString()
  })
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })))
}

const noEvalInstance =
  "task 'echo': no eval instance at difficulty 1 in 1000 draws (3 distinct keys, all train): " +
  'the split of an instance is chosen by hashing its key() (about 20% of distinct keys are eval, the rest train), so the task needs more distinct keys'

describe('README', () => {
  const example = taskExample(readme)
  let dir: string
  let file: string
  let narrow: string

  before(() => {
    mkdirSync(join(root, '.tmp'), { recursive: true })
    dir = mkdtempSync(join(root, '.tmp', 'readme-task-'))
    file = join(dir, 'echo.ts')
    narrow = join(dir, 'echo-three-words.ts')
    writeFileSync(file, example)
    writeFileSync(narrow, threeWords(example))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', include: ['echo.ts'] }),
    )
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("README - the task example type-checks in a folder inside the clone, importing 'triad/...'", async () => {
    assert.match(example, /from 'triad\/actors\/environment\/task\.ts'/)
    const r = await typecheck(join(dir, 'tsconfig.json'))
    assert.equal(r.output, '')
    assert.equal(r.code, 0)
  })

  it('README - triad env try plays the example task on a train and on a held-out instance', async () => {
    for (const command of [
      'npx triad env try mytasks/echo.ts',
      'npx triad env try mytasks/echo.ts --split eval',
    ])
      assert.ok(readme.includes(command), `the README shows \`${command}\``)
    for (const split of ['train', 'eval']) {
      const r = await runTriad(['env', 'try', file, '--split', split, '--json'])
      assert.equal(r.code, 0, r.stderr)
      const t = JSON.parse(r.stdout) as Record<string, unknown>
      assert.equal(t.task, 'echo')
      assert.equal(t.split, split)
      assert.equal(t.status, 'completed')
      assert.equal(t.reward, 1)
      assert.deepEqual(t.stepGood, [1])
    }
  })

  it('README - a recipe with the example task passes the held-out check', async () => {
    const mod = (await import(pathToFileURL(file).href)) as { echo: AnyTask }
    const recipe = resolveTasks(
      defineRecipe({ tasks: [{ name: 'echo' }] }),
      taskCatalogOf(taskRegistry([mod.echo])),
    )
    assert.deepEqual(recipe.tasks[0]!.difficulty, { start: 1, min: 1, max: 1 })
  })

  it('README - with the three words alone the task has no eval instance: env try and the recipe check say why', async () => {
    const r = await runTriad(['env', 'try', narrow, '--split', 'eval'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `triad: ${noEvalInstance}\n`)
    assert.equal(r.stdout, '')

    const mod = (await import(pathToFileURL(narrow).href)) as { echo: AnyTask }
    assert.throws(
      () =>
        resolveTasks(defineRecipe({ tasks: [{ name: 'echo' }] }), taskCatalogOf(taskRegistry([mod.echo]))),
      (err: unknown) =>
        err instanceof RecipeError &&
        err.message ===
          `invalid recipe:\ntasks[0]: the evaluation needs 16 held-out (eval) instances at difficulty 1: ${noEvalInstance}`,
    )
  })
})
