import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ManualClock } from '../../actors/testing.ts'
import { LiveView } from '../../bin/monitor/live-view.ts'
import { syntheticMetrics, syntheticSftMetrics } from '../support/synthetic-run.ts'

/** A live view writing into an array, on a manual clock. */
function view(tty: boolean) {
  const clock = new ManualClock(0)
  const out: string[] = []
  const v = new LiveView({ run: 'r', maxSteps: 10, tty, clock, write: (t) => out.push(t), barSize: 10 })
  return { v, clock, out }
}

describe('bin/monitor/live-view', () => {
  it('live-view - elsewhere than a terminal: a snapshot when the SFT starts, when RL starts, and every 30 s', () => {
    const { v, clock, out } = view(false)
    const sft = syntheticSftMetrics(120, 120)
    v.add(sft[0]!)
    assert.equal(out.length, 1)
    assert.match(out[0]!, /^run r {2}cold-start SFT {2}\S+ 1% {2}step 1\/120\n/)
    for (const line of sft.slice(1, 60)) v.add(line)
    assert.equal(out.length, 1, 'no snapshot within the SFT phase before the timer')
    clock.advance(30_000)
    assert.equal(out.length, 2)
    assert.match(out[1]!, /step 60\/120\n.*\n.*1\.4000 .*1m 00s/s)
    v.log('a log line')
    assert.equal(out[2], 'a log line\n')
    for (const line of sft.slice(60)) v.add(line)
    assert.equal(out.length, 4, 'the SFT reached its total: the RL view')
    assert.match(out[3]!, /^run r {2}\S+ 0% {2}step 0\/10\ncold-start SFT done: 120\/120 steps/)
    for (const line of syntheticMetrics(3)) v.add(line)
    assert.equal(out.length, 4)
    v.stop()
    assert.equal(out.length, 5)
    assert.match(out[4]!, /^run r {2}\S+ 20% {2}step 2\/10\n/)
    clock.advance(60_000)
    assert.equal(out.length, 5, 'nothing after stop')
  })

  it('live-view - with a time budget: the time since the view started against it, the bar following the budget further along', () => {
    const clock = new ManualClock(1_000_000)
    const out: string[] = []
    const v = new LiveView({
      run: 'r',
      maxSteps: 100,
      maxMinutes: 10,
      tty: false,
      clock,
      write: (t) => out.push(t),
      barSize: 10,
    })
    for (const line of syntheticMetrics(3)) v.add(line)
    assert.equal(out.length, 1, 'RL started: drawn at its first step')
    assert.match(out[0]!, /^run r {2}\u2591{10} 1% {2}step 1\/100 {2}time 0s\/10m 00s\n/)
    clock.advance(180_000) // six snapshots, one every 30 s
    assert.equal(out.length, 7)
    assert.match(out[6]!, /^run r {2}\u2588{3}\u2591{7} 30% {2}step 2\/100 {2}time 3m 00s\/10m 00s\n/)
    v.stop()
  })

  it('live-view - on a terminal: redrawn in place every 2 s, log lines above it', () => {
    const { v, clock, out } = view(true)
    for (const line of syntheticSftMetrics(10, 120)) v.add(line)
    assert.equal(out.length, 1)
    const height = out[0]!.split('\n').length - 1
    clock.advance(2_000)
    assert.equal(out[1], `\x1b[${height}A\x1b[0J`, 'the previous view is erased')
    assert.match(out[2]!, /step 10\/120/)
    v.log('hello')
    assert.deepEqual(out.slice(3), [`\x1b[${height}A\x1b[0J`, 'hello\n'])
    clock.advance(2_000)
    assert.equal(out.length, 6, 'nothing to erase after a log line')
    assert.match(out[5]!, /step 10\/120/)
    v.stop()
  })
})
