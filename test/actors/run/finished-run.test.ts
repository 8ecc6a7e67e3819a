import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  createRunDir,
  findFinishedRun,
  type RunDir,
  readRunEnd,
  runEndLine,
  writeEvalResult,
} from '../../../actors/index.ts'

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

  it('readRunEnd - the last stop after the last start or resume: step, time, exit status, and the final evaluation file (the one named, else the newest of that step)', async () => {
    const dir = await runAt(undefined)
    const log = (e: Record<string, unknown>) =>
      appendFileSync(join(dir.logsDir, 'run.jsonl'), `${JSON.stringify(e)}\n`)
    assert.equal(await readRunEnd(dir), undefined, 'no log yet')
    log({ event: 'start', time: 1_000, recipe: 'r.ts' })
    log({ event: 'transport', time: 1_001, transport: 'in-process' })
    assert.equal(await readRunEnd(dir), undefined, 'running (or killed: no stop)')
    log({
      event: 'stop',
      time: 5_000,
      reason: 'signal',
      steps: 4,
      signal: 'SIGTERM',
      restarts: { learner: 0 },
    })
    assert.deepEqual(await readRunEnd(dir), {
      step: 4,
      time: 5_000,
      reason: 'signal',
      signal: 'SIGTERM',
      exitCode: 143,
      restarts: { learner: 0 },
    })
    log({ event: 'resume', time: 6_000, recipe: 'r.ts' })
    assert.equal(await readRunEnd(dir), undefined, 'resumed: running again')
    const older = await final(dir, 7_000, 8)
    const named = await writeEvalResult(dir, 'final-7500', { step: 8, rows: [{ checkpoint: 'step-8' }] })
    await final(dir, 8_000, 8)
    log({ event: 'stop', time: 9_000, reason: 'steps', steps: 8, restarts: { learner: 1 }, evalFile: named })
    const end = await readRunEnd(dir)
    assert.deepEqual(end, {
      step: 8,
      time: 9_000,
      reason: 'steps',
      exitCode: 0,
      evalFile: named,
      restarts: { learner: 1 },
    })
    assert.equal(
      runEndLine(dir, end!),
      `run ${dir.id} ended at step 8, 1970-01-01T00:00:09.000Z, exit 0 (step budget), final evaluation in eval/final-7500.json`,
    )
    // A stop event without evalFile (written before it was recorded): the newest final file of its step.
    log({ event: 'resume', time: 10_000 })
    log({ event: 'stop', time: 11_000, reason: 'time', steps: 8 })
    const newest = join(dir.evalDir, 'final-8000.json')
    assert.equal((await readRunEnd(dir))?.evalFile, newest)
    assert.notEqual(older, newest)
    log({ event: 'resume', time: 12_000 })
    log({ event: 'stop', time: 13_000, reason: 'failed', steps: 9 })
    const failed = await readRunEnd(dir)
    assert.deepEqual(failed, { step: 9, time: 13_000, reason: 'failed', exitCode: 1 })
    assert.equal(
      runEndLine(dir, failed!),
      `run ${dir.id} ended at step 9, 1970-01-01T00:00:13.000Z, exit 1 (failed), no final evaluation`,
    )
    // A torn last line (the disk filled mid-write) is passed over.
    appendFileSync(join(dir.logsDir, 'run.jsonl'), '{"event":"res')
    assert.equal((await readRunEnd(dir))?.step, 9)
  })
})
