import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { recipeDifferences } from '../../bin/run/index.ts'
import {
  loadRecipe,
  loadRecipeSource,
  RecipeError,
  RecipeLoadError,
  resolveRecipe,
  type TaskCatalog,
  withField,
} from '../../recipes/index.ts'

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
    // The ablations' baseline is the quickstart's setting with a budget of 30 learner steps a run.
    const ablation = await loadRecipe(join(recipesDir, 'ablation.ts'), { catalog })
    assert.deepEqual(
      recipeDifferences(quick, ablation).map((d) => d.path),
      ['budget.maxMinutes', 'budget.maxSteps', 'name'],
    )
    assert.equal(ablation.budget.maxSteps, 30)
    assert.equal(ablation.budget.maxMinutes, 20)
  })

  it('loadRecipeSource - the recipe as written: a field changed and resolved again recomputes the defaults that follow from it', async () => {
    const file = recipeFile(
      "export default defineRecipe({ tasks: [{ name: 'calc' }], pipeline: { staleEvery: 3 } })",
    )
    const { recipe, input } = await loadRecipeSource(file, { catalog })
    assert.equal(recipe.pipeline.stalenessBound, 7)
    assert.deepEqual(input, { tasks: [{ name: 'calc' }], pipeline: { staleEvery: 3 } })
    const changed = resolveRecipe(withField(input, ['pipeline', 'staleEvery'], 10), catalog)
    assert.equal(changed.pipeline.stalenessBound, 14)
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

  it('loadRecipe - every problem of a recipe in one error: bad fields, checks across fields, unknown tasks and levels', async () => {
    const body =
      "{ tasks: [{ name: 'calc', difficulty: { start: 9 } }, { name: 'chess' }], rl: { eps_high: 0 }, pipeline: { maxNewTokens: 2048 } }"
    const expected = [
      'rl.eps_high: must be > 0',
      'pipeline.maxNewTokens: must be < model.contextLength (1024)',
      "tasks[0].difficulty.start: 9 is above calc's highest level (4)",
      "tasks[1].name: unknown task 'chess'; valid tasks: calc, maze, sql",
    ].join('\n')
    // through defineRecipe, which throws while the file is imported, and as a plain object
    const defined = recipeFile(`export default defineRecipe(${body})`)
    await assert.rejects(
      loadRecipe(defined, { catalog }),
      (err: Error) => err instanceof RecipeError && err.message === `invalid recipe ${defined}:\n${expected}`,
    )
    const plain = recipeFile(`export default ${body}`)
    await assert.rejects(
      loadRecipe(plain, { catalog }),
      (err: Error) => err instanceof RecipeError && err.message === `invalid recipe ${plain}:\n${expected}`,
    )
  })

  it('loadRecipe - a start level above the task range is one problem, also when it is above difficulty.max too', async () => {
    const above = recipeFile(
      "export default defineRecipe({ tasks: [{ name: 'calc', difficulty: { start: 9 } }] })",
    )
    await assert.rejects(loadRecipe(above, { catalog }), {
      name: 'RecipeError',
      message: `invalid recipe ${above}:\ntasks[0].difficulty.start: 9 is above calc's highest level (4)`,
    })
    const both = recipeFile(
      "export default defineRecipe({ tasks: [{ name: 'calc', difficulty: { start: 9, max: 3 } }] })",
    )
    await assert.rejects(loadRecipe(both, { catalog }), {
      name: 'RecipeError',
      message: `invalid recipe ${both}:\ntasks[0].difficulty.start: must be <= difficulty.max (3)`,
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
