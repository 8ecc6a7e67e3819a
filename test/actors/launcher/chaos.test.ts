import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { after, describe, it } from 'node:test'
import {
  type ChaosKill,
  chaosKillLine,
  chaosReportLines,
  chaosSupervision,
  PROCESS_SUPERVISION,
  startChaos,
} from '../../../actors/index.ts'

/** A child that sleeps until killed. */
const sleeper = () => spawn('sleep', ['600'], { stdio: 'ignore' })

describe('chaos mode', () => {
  const children: ChildProcess[] = []
  after(() => {
    for (const c of children) c.kill('SIGKILL')
  })

  it('startChaos - one SIGKILL per interval to a target of the seeded schedule; the same seed picks the same targets', async () => {
    const picks = async (seed: number) => {
      const procs = { a: sleeper(), b: sleeper(), c: sleeper() }
      children.push(...Object.values(procs))
      const exits = Object.entries(procs).map(([name, p]) =>
        once(p, 'exit').then(([, signal]) => ({ name, signal: signal as string })),
      )
      const kills: ChaosKill[] = []
      let killedAll: () => void = () => {}
      const all = new Promise<void>((resolve) => {
        killedAll = resolve
      })
      const chaos = startChaos({
        everyMs: 20,
        seed,
        // A killed target is not running: it is passed over for the next one that is.
        targets: Object.entries(procs).map(([name, p]) => ({
          name,
          pid: () => (p.exitCode === null && p.signalCode === null ? p.pid : undefined),
        })),
        onKill: (k) => {
          kills.push(k)
          if (kills.length === 3) killedAll()
        },
      })
      await all
      assert.deepEqual(chaos.stop(), kills)
      const ended = await Promise.all(exits)
      assert.ok(ended.every((e) => e.signal === 'SIGKILL'))
      assert.deepEqual(
        kills.map((k) => k.n),
        [1, 2, 3],
      )
      assert.deepEqual(new Set(kills.map((k) => k.name)), new Set(['a', 'b', 'c']))
      assert.deepEqual(
        kills.map((k) => k.pid),
        kills.map((k) => procs[k.name as 'a' | 'b' | 'c'].pid),
      )
      return kills.map((k) => k.name).join('')
    }
    assert.equal(await picks(7), await picks(7))
  })

  it('startChaos - no target running: the tick kills nothing; stop ends it', async () => {
    const chaos = startChaos({ everyMs: 5, seed: 1, targets: [{ name: 'gone', pid: () => undefined }] })
    await new Promise((resolve) => setTimeout(resolve, 30))
    assert.deepEqual(chaos.stop(), [])
  })

  it('startChaos - a bad interval or no target is a RangeError', () => {
    for (const everyMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      assert.throws(
        () => startChaos({ everyMs, seed: 0, targets: [{ name: 'x', pid: () => undefined }] }),
        RangeError,
      )
    assert.throws(() => startChaos({ everyMs: 10, seed: 0, targets: [] }), /no process to kill/)
  })

  it('chaosSupervision - the window gets one more restart per interval, the rest of the policy as it is', () => {
    assert.deepEqual(chaosSupervision(PROCESS_SUPERVISION, 8_000), {
      ...PROCESS_SUPERVISION,
      maxRestarts: PROCESS_SUPERVISION.maxRestarts + 8,
    })
    assert.equal(
      chaosSupervision(PROCESS_SUPERVISION, 60_000).maxRestarts,
      PROCESS_SUPERVISION.maxRestarts + 1,
    )
  })

  it('chaosReportLines - the count by process, one line per kill, the restarts', () => {
    const kills: ChaosKill[] = [
      { n: 1, name: 'rollout', pid: 11, atMs: 8_000 },
      { n: 2, name: 'learner', pid: 12, atMs: 16_004 },
      { n: 3, name: 'rollout', pid: 13, atMs: 24_000 },
    ]
    assert.equal(chaosKillLine(kills[1]!), 'chaos: kill 2 at 16.0 s: learner (pid 12), SIGKILL')
    assert.deepEqual(chaosReportLines(kills, { learner: 1, rollout: 2, 'nats-server': 0 }), [
      'chaos: 3 kills: rollout 2, learner 1',
      'chaos: kill 1 at 8.0 s: rollout (pid 11), SIGKILL',
      'chaos: kill 2 at 16.0 s: learner (pid 12), SIGKILL',
      'chaos: kill 3 at 24.0 s: rollout (pid 13), SIGKILL',
      'chaos: restarts: learner 1, rollout 2, nats-server 0',
    ])
    assert.deepEqual(chaosReportLines([], {}), ['chaos: 0 kills', 'chaos: restarts: none'])
  })
})
