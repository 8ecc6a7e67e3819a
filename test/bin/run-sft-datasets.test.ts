import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runTriad } from '../support/triad-process.ts'

const defineRecipeFile = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

describe('bin/run - sft.datasets', () => {
  it('triad run with a dataset row whose tool call arguments are not JSON exits 2 (bad input, like a recipe the schema refuses) with one line naming file, row and field, and makes no run directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-run-ds-'))
    const data = join(dir, 'bad.jsonl')
    const call = { id: 'c0', type: 'function', function: { name: 'add', arguments: 'a=1' } }
    writeFileSync(
      data,
      `${JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })}\n${JSON.stringify({
        messages: [
          { role: 'user', content: 'add' },
          { role: 'assistant', content: null, tool_calls: [call] },
        ],
      })}\n`,
    )
    const recipe = join(dir, 'ds.ts')
    writeFileSync(
      recipe,
      `import { defineRecipe } from '${defineRecipeFile}'
export default defineRecipe({ name: 'ds', tasks: [{ name: 'calc' }], sft: { experts: false, datasets: [{ path: '${data}' }] } })
`,
    )
    const runsDir = join(dir, 'runs')
    const r = await runTriad(['run', recipe, '--in-process', '--runs-dir', runsDir])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      `triad: sft dataset ${data} row 2: messages[1].tool_calls[0].function.arguments: is not JSON: "a=1"\n`,
    )
    assert.equal(existsSync(runsDir), false)
  })

  it('triad run --check - the cold start it will run: with sft.experts false no expert trajectories, the rows of sft.datasets counted, and the step bound of those', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-run-ds-'))
    const data = join(dir, 'rows.jsonl')
    const row = (i: number) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: `add ${i}` },
          { role: 'assistant', content: `${i + 1}` },
        ],
      })
    writeFileSync(data, `${[0, 1, 2, 3, 4].map(row).join('\n')}\n`)
    const recipe = join(dir, 'ds.ts')
    const write = (experts: boolean) =>
      writeFileSync(
        recipe,
        `import { defineRecipe } from '${defineRecipeFile}'
export default defineRecipe({ name: 'ds', tasks: [{ name: 'calc' }, { name: 'sql' }], sft: { experts: ${experts}, expertTrajectoriesPerTask: 4, batchSize: 2, epochs: 3, datasets: [{ path: '${data}' }] } })
`,
      )
    write(false)
    const off = await runTriad(['run', recipe, '--check', '--runs-dir', join(dir, 'runs')])
    assert.equal(off.code, 0, off.stderr)
    const derived = JSON.parse(off.stdout).derived
    // 5 dataset rows, no expert trajectories: ceil(5 / 2) = 3 batches per epoch, x 3 epochs.
    assert.deepEqual([derived.sftTrajectories, derived.sftStepsAtMost], [5, 9])
    write(true)
    const on = await runTriad(['run', recipe, '--check', '--runs-dir', join(dir, 'runs')])
    assert.equal(on.code, 0, on.stderr)
    // 2 tasks x 4 expert trajectories + 5 rows = 13: ceil(13 / 2) = 7 batches per epoch, x 3.
    assert.deepEqual(
      [JSON.parse(on.stdout).derived.sftTrajectories, JSON.parse(on.stdout).derived.sftStepsAtMost],
      [13, 21],
    )
    assert.equal(existsSync(join(dir, 'runs')), false)
  })
})
