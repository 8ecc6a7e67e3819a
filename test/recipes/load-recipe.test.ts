import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { loadRecipe, RecipeError, RecipeLoadError, type TaskCatalog } from '../../recipes/index.ts'

const recipesDir = fileURLToPath(new URL('../../recipes/', import.meta.url))
const defineRecipePath = join(recipesDir, 'define-recipe.ts')
const dir = mkdtempSync(join(tmpdir(), 'triad-recipe-'))
let n = 0
/** Writes a recipe module and returns its path. */
function recipeFile(body: string): string {
  const file = join(dir, `r${++n}.ts`)
  writeFileSync(file, `import { defineRecipe } from ${JSON.stringify(defineRecipePath)}\n${body}\n`)
  return file
}
const catalog: TaskCatalog = Object.fromEntries(
  ['calc', 'sql', 'maze'].map((name) => [name, { name, difficulty: { min: 1, max: 4, default: 1 } }]),
)

describe('recipes/load-recipe', () => {
  it('loadRecipe - loads the shipped recipes against the task names they use', async () => {
    const quick = await loadRecipe(join(recipesDir, 'quickstart.ts'), { catalog })
    assert.equal(quick.name, 'quickstart')
    assert.deepEqual(
      quick.tasks.map((t) => t.name),
      ['calc', 'sql', 'maze'],
    )
    assert.ok(quick.budget.maxMinutes! <= 20)
    const tiny = await loadRecipe(join(recipesDir, 'tiny.ts'), { catalog })
    assert.ok(tiny.budget.maxMinutes! * 60 <= 90, 'the tiny recipe fits the 90 s CI budget')
  })

  it('loadRecipe - a wrong field names the file and the field', async () => {
    const file = recipeFile("export default defineRecipe({ tasks: [{ name: 'calc' }], rl: { eps_high: 0 } })")
    await assert.rejects(
      loadRecipe(file, { catalog }),
      (err: Error) =>
        err instanceof RecipeError &&
        err.file === file &&
        err.message === `invalid recipe ${file}:\nrl.eps_high: must be > 0`,
    )
  })

  it('loadRecipe - an unknown task names the valid tasks', async () => {
    const file = recipeFile("export default defineRecipe({ tasks: [{ name: 'calc' }, { name: 'chess' }] })")
    await assert.rejects(loadRecipe(file, { catalog }), {
      name: 'RecipeError',
      message: `invalid recipe ${file}:\ntasks[1].name: unknown task 'chess'; valid tasks: calc, maze, sql`,
    })
  })

  it('loadRecipe - a plain object default export is validated too', async () => {
    const ok = join(dir, 'plain.ts')
    writeFileSync(ok, "export default { tasks: [{ name: 'sql' }], seed: 3 }\n")
    assert.equal((await loadRecipe(ok, { catalog })).seed, 3)
    const bad = join(dir, 'plain-bad.ts')
    writeFileSync(bad, "export default { tasks: [{ name: 'sql' }], sed: 3 }\n")
    await assert.rejects(loadRecipe(bad, { catalog }), /sed: unknown field/)
  })

  it('loadRecipe - a missing file, a failing import and a missing default export are load errors', async () => {
    await assert.rejects(
      loadRecipe(join(dir, 'nope.ts')),
      (err: Error) => err instanceof RecipeLoadError && /no such file/.test(err.message),
    )
    await assert.rejects(
      loadRecipe(dir),
      (err: Error) => err instanceof RecipeLoadError && /not a file/.test(err.message),
    )
    const throws = join(dir, 'throws.ts')
    writeFileSync(throws, "throw new Error('boom')\n")
    await assert.rejects(
      loadRecipe(throws),
      (err: Error) => err instanceof RecipeLoadError && /importing it failed: boom/.test(err.message),
    )
    const none = join(dir, 'none.ts')
    writeFileSync(none, 'export const recipe = 1\n')
    await assert.rejects(
      loadRecipe(none),
      (err: Error) => err instanceof RecipeLoadError && /no default export/.test(err.message),
    )
  })

  it('loadRecipe - a CommonJS recipe in a process with only the ES module loader of tsx is a load error that says what to do', async () => {
    // A recipe in a temporary folder has no package.json with "type": "module" above it.
    const file = recipeFile("export default defineRecipe({ tasks: [{ name: 'calc' }] })")
    const loadRecipeUrl = new URL('../../recipes/load-recipe.ts', import.meta.url).href
    const source = `
      import { register } from 'tsx/esm/api'
      register()
      const { loadRecipe } = await import(${JSON.stringify(loadRecipeUrl)})
      try { await loadRecipe(${JSON.stringify(file)}) } catch (err) { console.log(JSON.stringify({ name: err.name, message: err.message })) }`
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
      stdio: ['ignore', 'pipe', 'inherit'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    })
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
    })
    const code = await new Promise((r) => child.once('exit', r))
    assert.equal(code, 0)
    assert.deepEqual(JSON.parse(out), {
      name: 'RecipeLoadError',
      message:
        `cannot load recipe ${file}: it is a CommonJS module (no package.json with "type": "module" above it), and this process loads TypeScript only as ES modules; ` +
        'run it with the triad command or `node --import tsx` (both load it), or put a package.json with {"type": "module"} beside it',
    })
  })
})
