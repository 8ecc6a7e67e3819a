import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { latestRunCheckpoint } from '../../../actors/index.ts'

/** A run directory whose `checkpoints/` holds these checkpoint folders (a `config.json` each). */
function runWith(checkpoints: string[]): string {
  const run = mkdtempSync(join(tmpdir(), 'triad-runckpt-'))
  for (const name of checkpoints) {
    mkdirSync(join(run, 'checkpoints', name), { recursive: true })
    writeFileSync(join(run, 'checkpoints', name, 'config.json'), '{}')
  }
  mkdirSync(join(run, 'checkpoints'), { recursive: true })
  return run
}

describe('actors/run/run-checkpoint', () => {
  it("latestRunCheckpoint - the step named by latest.json, found in this run's checkpoints/ whatever its recorded path", () => {
    const run = runWith(['sft', 'step-40', 'step-50'])
    // triad run records the path as it saw it (relative to where it ran)
    writeFileSync(
      join(run, 'checkpoints', 'latest.json'),
      JSON.stringify({ version: 50, usedSeqs: [], dir: 'runs/elsewhere/checkpoints/step-50' }),
    )
    assert.deepEqual(latestRunCheckpoint(run), {
      dir: join(run, 'checkpoints', 'step-50'),
      name: 'step-50',
      step: 50,
    })
  })

  it('latestRunCheckpoint - without latest.json the highest step-N with a config.json, else the SFT, else none', () => {
    const run = runWith(['sft', 'step-9', 'step-10'])
    mkdirSync(join(run, 'checkpoints', 'step-11')) // being written: no config.json yet
    assert.deepEqual(latestRunCheckpoint(run), {
      dir: join(run, 'checkpoints', 'step-10'),
      name: 'step-10',
      step: 10,
    })
    const sftOnly = runWith(['sft'])
    assert.deepEqual(latestRunCheckpoint(sftOnly), {
      dir: join(sftOnly, 'checkpoints', 'sft'),
      name: 'sft',
      step: 0,
    })
    assert.equal(latestRunCheckpoint(runWith([])), undefined)
    assert.equal(latestRunCheckpoint(join(tmpdir(), 'no-such-run-dir')), undefined)
  })
})
