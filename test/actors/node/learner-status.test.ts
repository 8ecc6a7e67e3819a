import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import {
  type ActorSystem,
  connectNats,
  InProcessTransport,
  startActorSystem,
  type Transport,
} from '../../../actors/index.ts'
import { exposeLearner, type LearnerNodeStatus, learnerState } from '../../../actors/testing.ts'
import { LearnerState, LearnerStatus, MessageRegistry, Subjects } from '../../../protocols/index.ts'

/** A status whose numbers the test sets. */
function status() {
  const s = {
    version: 0,
    steps: 0,
    checkpoint: undefined as string | undefined,
    metrics: {} as Record<string, number>,
  }
  return {
    s,
    view: {
      version: () => s.version,
      steps: () => s.steps,
      checkpoint: () => s.checkpoint,
      metrics: () => s.metrics,
      stats: () => ({ groups: 2 * s.steps }),
    },
  }
}

/** An actor that answers `learner.status` from `view` (as the learner actor does), exposed as the learner. */
async function exposedLearner(
  system: ActorSystem,
  t: Transport,
  run: string,
  id: string,
  view: LearnerNodeStatus,
) {
  const ref = system.spawn(`learner-${run}`, { init: () => ({}), receive: () => learnerState(view) })
  const exposed = await exposeLearner(t, ref, run, id, view)
  return {
    stop: async () => {
      await exposed.stop()
      await ref.stop()
    },
  }
}

describe('actors/node/learner-status', () => {
  const system = startActorSystem({ name: 'learner-status-test' })
  after(() => system.stop())

  it('learner-status - learner.status is answered with the state at the time of the request', async () => {
    const t = new InProcessTransport()
    const { s, view } = status()
    const served = await exposedLearner(system, t, 'ls', 'learner', view)
    const ask = () =>
      t.request(Subjects.learner('ls'), LearnerStatus.make({}), {
        timeoutMs: 5_000,
        replies: new MessageRegistry([LearnerState]),
      })
    assert.deepEqual((await ask()).payload, { version: 0, steps: 0, metrics: {} })
    Object.assign(s, {
      version: 7,
      steps: 3,
      checkpoint: '/runs/r/checkpoints/step-6',
      metrics: { 'loss/total': 0.5 },
    })
    assert.deepEqual((await ask()).payload, {
      version: 7,
      steps: 3,
      checkpoint: '/runs/r/checkpoints/step-6',
      metrics: { 'loss/total': 0.5 },
    })
    await served.stop()
    await t.close()
  })

  it('learner-status - on NATS the learner is the service triad-learner of its run, with version and steps in its stats', async () => {
    const run = `ls-${process.pid}`
    const t = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'learner', id: 'l0' })
    const { s, view } = status()
    Object.assign(s, { version: 4, steps: 4 })
    const served = await exposedLearner(system, t, run, 'l0', view)
    try {
      const client = new Svcm(t.nc as never).client({ strategy: 'timer', maxWait: 500 })
      const mine = []
      for await (const x of await client.stats('triad-learner')) if (x.metadata?.run === run) mine.push(x)
      assert.equal(mine.length, 1)
      assert.deepEqual(mine[0]!.metadata, { run, id: 'l0' })
      const data = mine[0]!.endpoints![0]!.data as Record<string, number>
      assert.equal(data.version, 4)
      assert.equal(data.steps, 4)
      assert.equal(data.groups, 8)
      assert.equal(data.restarts, 0)
      assert.equal(mine[0]!.endpoints![0]!.subject, Subjects.learner(run))
    } finally {
      await served.stop()
      await t.close()
    }
  })
})
