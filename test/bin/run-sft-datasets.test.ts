import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runTriad } from '../support/triad-process.ts'

const defineRecipeFile = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

describe('bin/run - sft.datasets', () => {
  it('triad run with a dataset row whose tool call arguments are not JSON exits 1 with one line naming file, row and field, and makes no run directory', async () => {
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
    assert.equal(r.code, 1)
    assert.equal(
      r.stderr,
      `triad: sft dataset ${data} row 2: messages[1].tool_calls[0].function.arguments: is not JSON: "a=1"\n`,
    )
    assert.equal(existsSync(runsDir), false)
  })
})
