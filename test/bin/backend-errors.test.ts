import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startTriad } from '../support/triad-process.ts'

// Real `triad` processes: a backend or thread setting that cannot work is one line and a non-zero
// exit, never a stack trace, whichever command meets it.
describe('bin/triad - backend and thread settings that cannot work', () => {
  it('TRIAD_THREADS above the cores: one line naming the setting, exit 2', async () => {
    const child = startTriad(['bench', 'rl-step', '--quick'], { TRIAD_THREADS: '999' })
    assert.equal((await child.exited).code, 2)
    assert.match(
      child.stderr(),
      /^triad: TRIAD_THREADS="999": more than the \d+ cores? of this machine; give 1 to \d+/,
    )
    assert.equal(child.stderr().trim().split('\n').length, 1)
    assert.deepEqual(child.stdout, [])
  })

  it('TRIAD_BACKEND unknown: one line listing the known backends, exit 2', async () => {
    // A model directory (its config.json is not read before the backend is chosen).
    const model = mkdtempSync(join(tmpdir(), 'triad-backend-'))
    writeFileSync(join(model, 'config.json'), '{}')
    const child = startTriad(['generate', model, '--prompt', 'hi'], { TRIAD_BACKEND: 'bogus' })
    assert.equal((await child.exited).code, 2)
    assert.equal(
      child.stderr(),
      "triad: unknown backend 'bogus'; known: native, tfjs-node-gpu, tfjs-node, wasm, cpu, cuda\n",
    )
  })

  // triad run refuses them before anything is made, not after its roles restart on them
  for (const [what, env, recipe, line] of [
    [
      'TRIAD_THREADS',
      { TRIAD_THREADS: '999' },
      '',
      /^triad: TRIAD_THREADS="999": more than the \d+ cores? of this machine/,
    ],
    ['TRIAD_BACKEND', { TRIAD_BACKEND: 'bogus' }, '', /^triad: unknown backend 'bogus'; known: native, /],
    [
      'model.threads.learner',
      {},
      "import { defineRecipe } from 'RECIPES/define-recipe.ts'\nimport { tinyInput } from 'RECIPES/tiny.ts'\nexport default defineRecipe({ ...tinyInput, model: { ...tinyInput.model, threads: { learner: 999 } } })\n",
      /^triad: model\.threads\.learner="?999"?: more than the \d+ cores? of this machine/,
    ],
  ] as const) {
    it(`triad run with a ${what} this machine cannot give: one line, exit 2, no run directory`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'triad-backend-run-'))
      let file = 'recipes/tiny.ts'
      if (recipe) {
        file = join(dir, 'recipe.ts')
        writeFileSync(file, recipe.replaceAll('RECIPES', join(process.cwd(), 'recipes')))
      }
      for (const check of [false, true]) {
        const runsDir = join(dir, 'runs')
        const child = startTriad(['run', file, '--runs-dir', runsDir, ...(check ? ['--check'] : [])], env)
        assert.equal((await child.exited).code, 2, child.stderr())
        assert.match(child.stderr(), line)
        assert.equal(child.stderr().trim().split('\n').length, 1)
        assert.equal(existsSync(runsDir), false)
      }
    })
  }
})
