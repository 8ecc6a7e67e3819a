import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir, RunFileExistsError, readEvalResults, writeEvalResult } from '../../../actors/index.ts'

describe('actors/run/eval-file', () => {
  it('writeEvalResult - writes eval/<name>.json once and reads it back; bad files are reported', async () => {
    const dir = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-eval-')),
      name: 'r',
      recipe: {},
    })
    const result = { step: 10, k: 8, rows: [{ task: 'calc', avg_at_k: 0.5, pass_at_k: 0.9 }] }
    await writeEvalResult(dir, 'step-000010', result)
    await assert.rejects(writeEvalResult(dir, 'step-000010', { rows: [] }), RunFileExistsError)
    writeFileSync(join(dir.evalDir, 'zz-bad.json'), '{')
    writeFileSync(join(dir.evalDir, 'zz-shape.json'), '{"rows": 3}')
    const read = await readEvalResults(dir)
    assert.deepEqual(
      read.results.map((r) => r.result),
      [result],
    )
    assert.deepEqual(
      read.errors.map((e) => e.message.replace(`${dir.evalDir}/`, '')),
      [
        'zz-bad.json: not valid JSON',
        'zz-shape.json: not an evaluation result: Invalid input: expected array, received number',
      ],
    )
  })
})
