import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  type NatsTransport,
  remoteActor,
  startActorSystem,
  TRIAD_SWITCHES_DEFAULTS,
} from '../../../actors/index.ts'
import { envAdapterReplies, startEnvAdapter, TRIAD_SWITCHES_OFF } from '../../../actors/testing.ts'
import {
  EnvDifficulty,
  EnvDifficultyGet,
  MessageRegistry,
  MetricsReport,
  type PayloadOf,
  Subjects,
  type Trajectory,
  TrajectoryGroup,
} from '../../../protocols/index.ts'

const sample = (success: boolean): Trajectory => ({
  tokens: Int32Array.from([1, 2]),
  loss_mask: Uint8Array.from([0, 1]),
  logprobs: Float32Array.from([0, -1]),
  versions: Int32Array.from([-1, 0]),
  turn_starts: Int32Array.from([1]),
  reward: success ? 1 : 0,
  status: 'completed',
  turns: 1,
  metrics: { success: success ? 1 : 0 },
  stale_turns: 0,
})

const group = (index: number, difficulty: number, successes: boolean[], version = 3) =>
  TrajectoryGroup.make({
    group_id: `g-${index}-${difficulty}-${version}`,
    task: 'calc',
    index,
    seed: index,
    difficulty,
    started_version: version,
    samples: successes.map(sample),
  })

type Metrics = PayloadOf<typeof MetricsReport>
type Difficulty = PayloadOf<typeof EnvDifficulty>

/** Waits until `pred` holds on the received list (with a deadline). */
async function waitFor<T>(list: T[], pred: (l: T[]) => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!pred(list)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setImmediate(r))
  }
}

describe('actors/env-adapter/env-adapter-actor - on NATS', () => {
  let t: NatsTransport
  const system = startActorSystem({ name: 'env-adapter-test' })
  before(async () => {
    t = await connectNats({
      servers: '127.0.0.1:4222',
      run: 'envadapt',
      role: 'test',
      id: String(process.pid),
    })
  })
  after(async () => {
    await system.stop()
    await t.close()
  })

  for (const on of [true, false]) {
    it(`env adapter - adaptiveTasks ${on ? 'on: mastered instances get harder' : 'off: levels never change'}, and the metrics show it`, async () => {
      const run = `envadapt-${on ? 'on' : 'off'}-${process.pid}`
      const metrics: Metrics[] = []
      const updates: Difficulty[] = []
      const mSub = t.subscribe(Subjects.metrics(run, 'env-adapter'), {
        accepts: new MessageRegistry([MetricsReport]),
        handler: (m) => metrics.push(m.payload as Metrics),
      })
      const dSub = t.subscribe(Subjects.difficulty(run), {
        accepts: new MessageRegistry([EnvDifficulty]),
        handler: (m) => updates.push(m.payload as Difficulty),
      })
      await t.flush()
      const { ref, exposed } = await startEnvAdapter(system, t, {
        run,
        adapter: { tasks: { calc: { min: 1, max: 3, default: 1 } }, window: 4 },
        switches: on ? TRIAD_SWITCHES_DEFAULTS : TRIAD_SWITCHES_OFF,
      })
      ref.tell(group(0, 1, [true, true, true, true])) // mastered
      ref.tell(group(1, 1, [false, true, false, false])) // 0.25: stays
      await waitFor(metrics, (l) => l.length >= 2, 'two metrics reports')
      const last = metrics.at(-1)!
      assert.equal(last.role, 'env-adapter')
      assert.equal(last.step, 3)
      assert.equal(last.values['env/adapter/enabled'], on ? 1 : 0)
      assert.equal(last.values['triad/switch/adaptive_tasks'], on ? 1 : 0)
      assert.equal(last.values['env/adapter/raised'], on ? 1 : 0)
      assert.equal(last.values['env/difficulty/calc'], on ? 1.5 : 1)
      assert.equal(last.values['env/difficulty/calc/level_2'], on ? 0.5 : 0)
      assert.equal(last.values['env/accuracy/calc'], (1 + 0.25) / 2)
      // The current levels, asked over NATS as a late rollout process would.
      const reply = await remoteActor(t, Subjects.difficultyGet(run), { replies: envAdapterReplies }).ask(
        EnvDifficultyGet.make({}),
        5000,
      )
      const d = reply.payload as Difficulty
      assert.deepEqual(d.tasks.calc, { default: 1, levels: on ? { '0': 2 } : {} })
      assert.equal(d.adaptive, on)
      if (on) {
        await waitFor(updates, (l) => l.length >= 1, 'an env.difficulty update')
        assert.deepEqual(updates[0]!.tasks.calc!.levels, { '0': 2 })
      } else assert.equal(updates.length, 0) // an update is published before the report, same connection: in order
      assert.equal(exposed.stats().handled, 1)
      await exposed.stop()
      await ref.stop()
      await mSub.stop()
      await dSub.stop()
    })
  }
})
