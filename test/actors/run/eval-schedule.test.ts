import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  EvalSchedule,
  ManualClock,
  nextEvaluationStep,
  type PipelineCheckpoint,
} from '../../../actors/index.ts'

/** A checkpoint directory whose `latest.json` the test moves, as the learner loop writes it. */
function checkpoints() {
  const dir = join(mkdtempSync(join(tmpdir(), 'triad-evsched-')), 'checkpoints')
  mkdirSync(dir, { recursive: true })
  return {
    dir,
    /** Writes `step-<version>/` and points `latest.json` at it. */
    latest: (version: number) => {
      mkdirSync(join(dir, `step-${version}`), { recursive: true })
      writeFileSync(
        join(dir, 'latest.json.tmp'),
        JSON.stringify({ version, usedSeqs: [], dir: join(dir, `step-${version}`) }),
      )
      renameSync(join(dir, 'latest.json.tmp'), join(dir, 'latest.json'))
    },
  }
}

/** An evaluate function whose calls the test finishes one by one. */
function evaluations() {
  const calls: { version: number; signal: AbortSignal; finish: () => void }[] = []
  const waiters: (() => void)[] = []
  return {
    calls,
    evaluate: (c: PipelineCheckpoint, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        calls.push({ version: c.version, signal, finish: resolve })
        for (const w of waiters.splice(0)) w()
      }),
    /** Resolves when `n` calls were made, or rejects after 5 s. */
    until: (n: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`not ${n} evaluations within 5 s: ${calls.length}`)),
          5_000,
        )
        const check = () => {
          if (calls.length >= n) {
            clearTimeout(timer)
            resolve()
          } else waiters.push(check)
        }
        check()
      }),
  }
}

const settle = () => new Promise((r) => setImmediate(r))

describe('actors/run/eval-schedule', () => {
  it('eval-schedule - evaluates the checkpoint of every multiple of every, one at a time in step order: a multiple reached during an evaluation is pinned at once and queued', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const pinned: number[] = []
    const skipped: number[] = []
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 2,
      until: 10,
      evaluate: ev.evaluate,
      pin: (c) => {
        pinned.push(c.version)
        return { ...c, dir: `${c.dir}-pinned` }
      },
      onSkip: (c) => skipped.push(c.version),
      clock,
    })
    ck.latest(1)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(schedule.started, [], 'step 1 is below the first multiple')
    ck.latest(2)
    clock.advance(1_000)
    await ev.until(1)
    assert.equal(ev.calls[0]!.version, 2)
    // Steps 3, 4 and 5 come while step 2 is evaluated: 4 is pinned when seen and waits its turn.
    ck.latest(3)
    ck.latest(4)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(pinned, [2, 4], 'pinned before step 2 is done')
    ck.latest(5)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(schedule.started, [2])
    ev.calls[0]!.finish()
    await ev.until(2)
    assert.deepEqual(schedule.started, [2, 4])
    assert.equal(schedule.nextStep, 6)
    // latest.json went past 6 and 8 between two looks: 6 is read from checkpoints/step-6/, 8 was
    // pruned already and is reported, not evaluated.
    ck.latest(6)
    ck.latest(7)
    ck.latest(8)
    rmSync(join(ck.dir, 'step-8'), { recursive: true })
    ck.latest(9)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(pinned, [2, 4, 6])
    assert.deepEqual(skipped, [8])
    ev.calls[1]!.finish()
    await ev.until(3)
    assert.deepEqual(schedule.started, [2, 4, 6])
    assert.equal(ev.calls.length, 3)
    ev.calls[2]!.finish()
    // The step budget (10) is left to the end-of-run evaluation.
    ck.latest(10)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(schedule.started, [2, 4, 6])
    await schedule.stop({ wait: true })
  })

  it('eval-schedule - multiples seen only at the stop are still evaluated by a stop with wait', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const other = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 5,
      evaluate: ev.evaluate,
      clock,
      pollMs: 60_000,
    })
    ck.latest(5)
    ck.latest(10)
    let stopped = false
    const stopping = other.stop({ wait: true }).then(() => {
      stopped = true
    })
    await ev.until(1)
    assert.equal(ev.calls[0]!.version, 5)
    ev.calls[0]!.finish()
    await ev.until(2)
    assert.equal(ev.calls[1]!.version, 10)
    assert.equal(stopped, false)
    ev.calls[1]!.finish()
    await stopping
    assert.deepEqual(other.started, [5, 10])
  })

  it('eval-schedule - a new latest.json is seen from the file-system event, without the poll', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const schedule = new EvalSchedule({ checkpointsDir: ck.dir, every: 3, evaluate: ev.evaluate, clock })
    ck.latest(3)
    await ev.until(1)
    assert.equal(ev.calls[0]!.version, 3)
    ev.calls[0]!.finish()
    await schedule.stop({ wait: true })
  })

  it('eval-schedule - a run resumed at step 5 evaluates next at 6; stop waits for, or aborts, the one in progress', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    ck.latest(5)
    const ev = evaluations()
    const schedule = new EvalSchedule({ checkpointsDir: ck.dir, every: 3, evaluate: ev.evaluate, clock })
    assert.equal(schedule.nextStep, 6)
    ck.latest(6)
    clock.advance(1_000)
    await ev.until(1)
    let stopped = false
    const stopping = schedule.stop({ wait: true }).then(() => {
      stopped = true
    })
    await settle()
    assert.equal(stopped, false, 'stop waits for the evaluation in progress')
    assert.equal(ev.calls[0]!.signal.aborted, false)
    ev.calls[0]!.finish()
    await stopping

    const ev2 = evaluations()
    const other = new EvalSchedule({ checkpointsDir: ck.dir, every: 3, evaluate: ev2.evaluate, clock })
    ck.latest(9)
    clock.advance(1_000)
    await ev2.until(1)
    const aborted = new Promise<void>((r) => ev2.calls[0]!.signal.addEventListener('abort', () => r()))
    const stop = other.stop({ wait: false })
    await aborted
    ev2.calls[0]!.finish()
    await stop
  })

  it('eval-schedule - pending checkpoints (the interrupted evaluations of a resumed run) go first, the first at once, and stop with wait does them all', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    ck.latest(5)
    const ev = evaluations()
    const pending = [2, 4].map((version) => ({ version, usedSeqs: [], dir: join(ck.dir, `copy-${version}`) }))
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 3,
      until: 8,
      pending,
      evaluate: ev.evaluate,
      clock,
    })
    assert.equal(ev.calls.length, 1, 'the first pending one starts in the constructor')
    assert.equal(ev.calls[0]!.version, 2)
    assert.equal(schedule.nextStep, 6, 'the schedule itself goes on from the latest checkpoint')
    ck.latest(6)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(schedule.started, [2])
    ev.calls[0]!.finish()
    await ev.until(2)
    assert.deepEqual(schedule.started, [2, 4], 'pending before the due step 6')
    ev.calls[1]!.finish()
    await ev.until(3)
    assert.deepEqual(schedule.started, [2, 4, 6])
    ev.calls[2]!.finish()
    await settle()

    const ev2 = evaluations()
    const other = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 3,
      pending,
      evaluate: ev2.evaluate,
      clock,
    })
    let stopped = false
    const stopping = other.stop({ wait: true }).then(() => {
      stopped = true
    })
    ev2.calls[0]!.finish()
    await ev2.until(2)
    assert.equal(stopped, false)
    ev2.calls[1]!.finish()
    await stopping
    assert.deepEqual(other.started, [2, 4])
  })

  it('eval-schedule - a failed evaluation is reported and the schedule goes on', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const errors: string[] = []
    const seen: number[] = []
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 1,
      clock,
      evaluate: async (c) => {
        seen.push(c.version)
        if (c.version === 1) throw new Error('boom')
      },
      onError: (err, c) => errors.push(`${c.version}: ${(err as Error).message}`),
    })
    ck.latest(1)
    clock.advance(1_000)
    await settle()
    ck.latest(2)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(errors, ['1: boom'])
    assert.deepEqual(seen, [1, 2])
    await schedule.stop({ wait: true })
  })

  it('eval-schedule - every below 1 is refused; nextEvaluationStep is the next multiple', () => {
    assert.throws(
      () => new EvalSchedule({ checkpointsDir: tmpdir(), every: 0, evaluate: async () => {} }),
      (err: Error) =>
        err instanceof RangeError &&
        err.message === 'evaluation every must be a positive integer of learner steps, got 0',
    )
    assert.deepEqual(
      [0, 1, 24, 25, 26].map((v) => nextEvaluationStep(v, 25)),
      [25, 25, 25, 50, 50],
    )
  })
})
