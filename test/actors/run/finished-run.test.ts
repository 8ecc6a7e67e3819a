import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir, findFinishedRun, type RunDir, writeEvalResult } from '../../../actors/index.ts'

/** A run directory whose latest checkpoint is `version` (none when undefined). */
async function runAt(version: number | undefined): Promise<RunDir> {
  const dir = await createRunDir({
    runsDir: mkdtempSync(join(tmpdir(), 'triad-fin-')),
    name: 'fin',
    recipe: {},
  })
  if (version !== undefined)
    writeFileSync(
      join(dir.checkpointsDir, 'latest.json'),
      JSON.stringify({ version, usedSeqs: [], dir: join(dir.checkpointsDir, `step-${version}`) }),
    )
  return dir
}

const final = (dir: RunDir, ms: number, step: number) =>
  writeEvalResult(dir, `final-${ms}`, { step, rows: [{ checkpoint: `step-${step}` }] })

describe('actors/run/finished-run', () => {
  it('findFinishedRun - finished once the latest checkpoint reached the step budget and a final evaluation of it is written', async () => {
    const dir = await runAt(3)
    const evaluates = true
    assert.equal(await findFinishedRun(dir, { maxSteps: 3, evaluates }), undefined, 'no final evaluation yet')
    // A periodic evaluation, and a final one of an earlier step (a run resumed with more steps), do not count.
    await writeEvalResult(dir, 'step-000003', { step: 3, rows: [] })
    await final(dir, 1_000, 2)
    assert.equal(await findFinishedRun(dir, { maxSteps: 3, evaluates }), undefined)
    const file = await final(dir, 2_000, 3)
    assert.deepEqual(await findFinishedRun(dir, { maxSteps: 3, evaluates }), {
      step: 3,
      maxSteps: 3,
      evalFile: file,
    })
    // A budget lowered below the run's step is finished as well; a raised one is not.
    assert.deepEqual(await findFinishedRun(dir, { maxSteps: 2, evaluates }), {
      step: 3,
      maxSteps: 2,
      evalFile: file,
    })
    assert.equal(await findFinishedRun(dir, { maxSteps: 4, evaluates }), undefined)
    // A time budget alone never finishes a run.
    assert.equal(await findFinishedRun(dir, { maxSteps: undefined, evaluates }), undefined)
    // The newest final evaluation of the step is named.
    const newer = await final(dir, 3_000, 3)
    assert.equal((await findFinishedRun(dir, { maxSteps: 3, evaluates }))?.evalFile, newer)
  })

  it('findFinishedRun - without an end-of-run evaluation (evaluation.k 0) the step budget alone finishes a run; no checkpoint, not finished', async () => {
    assert.deepEqual(await findFinishedRun(await runAt(5), { maxSteps: 5, evaluates: false }), {
      step: 5,
      maxSteps: 5,
    })
    assert.equal(await findFinishedRun(await runAt(undefined), { maxSteps: 5, evaluates: false }), undefined)
  })

  it('findFinishedRun - a final evaluation whose rows lack the last checkpoint (its evaluation failed) does not finish the run', async () => {
    const dir = await runAt(3)
    // What the end of a run writes when the evaluation of step-3 failed: the SFT rows only.
    await writeEvalResult(dir, 'final-1000', { step: 3, rows: [{ checkpoint: 'sft', task: 'calc' }] })
    assert.equal(await findFinishedRun(dir, { maxSteps: 3, evaluates: true }), undefined)
    const file = await writeEvalResult(dir, 'final-2000', {
      step: 3,
      rows: [{ checkpoint: 'sft' }, { checkpoint: 'step-3' }],
    })
    assert.deepEqual(await findFinishedRun(dir, { maxSteps: 3, evaluates: true }), {
      step: 3,
      maxSteps: 3,
      evalFile: file,
    })
  })
})
