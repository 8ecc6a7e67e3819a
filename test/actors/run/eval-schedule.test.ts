import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { EvalSchedule, type PipelineCheckpoint } from '../../../actors/index.ts'
import { ManualClock, nextEvaluationStep } from '../../../actors/testing.ts'

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
  const calls: { version: number; dir: string; signal: AbortSignal; finish: () => void }[] = []
  const waiters: (() => void)[] = []
  return {
    calls,
    evaluate: (c: PipelineCheckpoint, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        calls.push({ version: c.version, dir: c.dir, signal, finish: resolve })
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
  it('eval-schedule - one evaluation at a time and at most one waiting: a multiple reached during an evaluation is pinned at once, a newer one replaces it (unpinned, skipped as superseded)', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const pinned: number[] = []
    const unpinned: string[] = []
    const skips: string[] = []
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 2,
      until: 10,
      evaluate: ev.evaluate,
      pin: (c) => {
        pinned.push(c.version)
        return { ...c, dir: `${c.dir}-pinned` }
      },
      unpin: (c) => unpinned.push(c.dir),
      onSkip: (s) => skips.push(`${s.version} ${s.reason} ${s.checkpoint.dir}`),
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
    // Steps 3 and 4 come while step 2 is evaluated: 4 is pinned when seen and waits its turn.
    ck.latest(3)
    ck.latest(4)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(pinned, [2, 4], 'pinned before step 2 is done')
    assert.equal(schedule.waitingStep, 4)
    // Step 6 comes while 2 still runs: 6 replaces 4, whose copy is released.
    ck.latest(5)
    ck.latest(6)
    clock.advance(1_000)
    await settle()
    assert.deepEqual(pinned, [2, 4, 6])
    assert.deepEqual(unpinned, [join(ck.dir, 'step-4-pinned')])
    assert.deepEqual(skips, [`4 superseded ${join(ck.dir, 'step-4-pinned')}`])
    assert.equal(schedule.waitingStep, 6)
    assert.deepEqual(schedule.started, [2])
    ev.calls[0]!.finish()
    await ev.until(2)
    assert.deepEqual(schedule.started, [2, 6], 'the newest multiple is evaluated next')
    assert.equal(schedule.waitingStep, undefined)
    assert.equal(schedule.nextStep, 8)
    ev.calls[1]!.finish()
    await settle()
    // latest.json went past 8 to 9 and 10 between two looks: 10 is the step budget (left to the
    // end-of-run evaluation), so 8 is the newest due multiple, read from checkpoints/step-8/.
    ck.latest(8)
    ck.latest(9)
    ck.latest(10)
    clock.advance(1_000)
    await ev.until(3)
    assert.deepEqual(schedule.started, [2, 6, 8])
    assert.equal(ev.calls[2]!.version, 8)
    assert.equal(schedule.nextStep, 10)
    ev.calls[2]!.finish()
    await schedule.stop({ wait: true })
    assert.deepEqual(schedule.skipped, [{ version: 4, reason: 'superseded' }])
  })

  it('eval-schedule - multiples that latest.json went past between two looks: the newest is taken, the older ones are superseded; a pruned newest is skipped as pruned', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const skips: string[] = []
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 2,
      evaluate: ev.evaluate,
      onSkip: (s) => skips.push(`${s.version} ${s.reason}`),
      clock,
      pollMs: 1_000,
    })
    for (const v of [1, 2, 3, 4, 5, 6, 7]) ck.latest(v)
    clock.advance(1_000)
    await ev.until(1)
    assert.equal(ev.calls[0]!.version, 6, 'read from checkpoints/step-6/')
    assert.equal(ev.calls[0]!.dir, join(ck.dir, 'step-6'))
    assert.deepEqual(skips, ['2 superseded', '4 superseded'])
    ev.calls[0]!.finish()
    await settle()
    ck.latest(8)
    ck.latest(9)
    rmSync(join(ck.dir, 'step-8'), { recursive: true })
    clock.advance(1_000)
    await settle()
    assert.deepEqual(skips, ['2 superseded', '4 superseded', '8 pruned'])
    assert.deepEqual(schedule.started, [6])
    assert.equal(schedule.nextStep, 10)
    await schedule.stop({ wait: true })
  })

  it('eval-schedule - the end of a run waits only for the evaluation in flight: the one waiting, and a multiple seen only at the stop, are skipped as stopped', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    const ev = evaluations()
    const unpinned: number[] = []
    const other = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 5,
      evaluate: ev.evaluate,
      pin: (c) => c,
      unpin: (c) => unpinned.push(c.version),
      clock,
      pollMs: 60_000,
    })
    ck.latest(5)
    clock.advance(60_000)
    await ev.until(1)
    ck.latest(10)
    clock.advance(60_000)
    await settle()
    assert.equal(other.waitingStep, 10)
    ck.latest(15)
    let stopped = false
    const stopping = other.stop({ wait: true }).then(() => {
      stopped = true
    })
    await settle()
    assert.equal(stopped, false, 'step 5 is in flight')
    assert.deepEqual(other.skipped, [
      { version: 10, reason: 'superseded' },
      { version: 15, reason: 'stopped' },
    ])
    assert.deepEqual(unpinned, [10, 15])
    ev.calls[0]!.finish()
    await stopping
    assert.deepEqual(other.started, [5])
    assert.equal(ev.calls.length, 1)
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

  it('eval-schedule - pending checkpoints (the interrupted evaluations of a resumed run) go first, the first at once, the last waits; a stop without wait keeps the waiting one for the next resume', async () => {
    const clock = new ManualClock(0)
    const ck = checkpoints()
    ck.latest(5)
    const ev = evaluations()
    const pending = [2, 3, 4].map((version) => ({
      version,
      usedSeqs: [],
      dir: join(ck.dir, `copy-${version}`),
    }))
    const unpinned: number[] = []
    const schedule = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 3,
      until: 8,
      pending,
      evaluate: ev.evaluate,
      unpin: (c) => unpinned.push(c.version),
      clock,
    })
    assert.equal(ev.calls.length, 1, 'the first pending one starts in the constructor')
    assert.equal(ev.calls[0]!.version, 2)
    assert.deepEqual(schedule.skipped, [{ version: 3, reason: 'superseded' }])
    assert.equal(schedule.waitingStep, 4)
    assert.equal(schedule.nextStep, 6, 'the schedule itself goes on from the latest checkpoint')
    ev.calls[0]!.finish()
    await ev.until(2)
    assert.deepEqual(schedule.started, [2, 4])
    ck.latest(6)
    clock.advance(1_000)
    await settle()
    assert.equal(schedule.waitingStep, 6)
    ev.calls[1]!.finish()
    await ev.until(3)
    assert.deepEqual(schedule.started, [2, 4, 6])
    ev.calls[2]!.finish()
    await schedule.stop({ wait: true })
    assert.deepEqual(unpinned, [3])

    const ev2 = evaluations()
    const kept: number[] = []
    const other = new EvalSchedule({
      checkpointsDir: ck.dir,
      every: 3,
      pending: pending.slice(0, 2),
      evaluate: ev2.evaluate,
      unpin: (c) => kept.push(c.version),
      clock,
    })
    assert.equal(other.waitingStep, 3)
    const stop = other.stop({ wait: false })
    assert.equal(ev2.calls[0]!.signal.aborted, true)
    ev2.calls[0]!.finish()
    await stop
    assert.deepEqual(other.started, [2])
    assert.deepEqual(kept, [], 'the waiting copy stays for the resume')
    assert.deepEqual(other.skipped, [])
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
