import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readLatestCheckpoint } from '../../../actors/index.ts'

describe('actors/pipeline/checkpoint-records', () => {
  it('readLatestCheckpoint - the recorded dir is resolved by name in this checkpoint directory (a copied or moved run)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-latest-'))
    try {
      assert.equal(readLatestCheckpoint(dir), undefined)
      // latest.json as the run wrote it where it first lived.
      writeFileSync(
        join(dir, 'latest.json'),
        JSON.stringify({
          version: 196,
          usedSeqs: [3, 4],
          dir: '/work/elsewhere/runs/long-1/checkpoints/step-196',
        }),
      )
      assert.deepEqual(readLatestCheckpoint(dir), {
        version: 196,
        usedSeqs: [3, 4],
        dir: join(dir, 'step-196'),
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
