import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { connectNats, InProcessTransport, type NodeConfig, type Transport } from '../../../actors/index.ts'
import { WeightStore } from '../../../actors/testing.ts'
import {
  type Envelope,
  MessageRegistry,
  MetricsReport,
  type PayloadOf,
  RolloutState,
  RolloutStatus,
  Subjects,
  TrajectoryGroup,
} from '../../../protocols/index.ts'
import { type LearnerRolloutPair, startLearnerRolloutPair } from '../../support/learner-rollout-pair.ts'
import { suiteNatsServer } from '../../support/suite-nats-server.ts'
import { tinyNodeConfig, tinyTriad } from '../../support/tiny-node-config.ts'

/**
 * The dynamic triad wired into the running pipeline, in one process over a real NATS server: a
 * learner node and a rollout node of a tiny model, with every triad switch on, then every one off;
 * then with every switch on over the in-process transport (the one-process mode of `triad run`).
 */

type Report = PayloadOf<typeof MetricsReport>
type Group = PayloadOf<typeof TrajectoryGroup>

/** A tiny run with every triad switch `on` (or off). */
const tinyConfig = (run: string, runDir: string, on: boolean): NodeConfig =>
  tinyNodeConfig(run, runDir, {
    seed: 3,
    model: { contextLength: 384 },
    triad: tinyTriad(on, on),
  })

/** How the parties of a run get their transport: one NATS connection each, or one in-process transport for all. */
type Connect = (run: string, role: string) => Promise<Transport>

const overNats =
  (url: string): Connect =>
  (run, role) =>
    connectNats({ servers: url, run, role, id: '0' })

/** Runs a tiny triad to `maxSteps` learner steps; returns every metrics report and trajectory group seen. */
async function runTiny(connect: Connect, on: boolean) {
  const run = `wire${on ? 'on' : 'off'}${process.pid}`
  const runDir = mkdtempSync(join(tmpdir(), 'triad-wire-'))
  const config = tinyConfig(run, runDir, on)
  const watch = await connect(run, 'test')
  const reports: Report[] = []
  const groups: Group[] = []
  const sub = watch.subscribe(`triad.${run}.>`, {
    accepts: new MessageRegistry([MetricsReport, TrajectoryGroup]),
    handler: (m: Envelope) => {
      if (process.env.WIRE_DEBUG) console.error(m.type, JSON.stringify(m.payload).slice(0, 300))
      if (m.type === MetricsReport.type) reports.push(m.payload as Report)
      if (m.type === TrajectoryGroup.type) groups.push(m.payload as Group)
    },
  })
  let pair: LearnerRolloutPair | undefined
  try {
    pair = await startLearnerRolloutPair(config, (role) => connect(run, role))
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      pair.learner.done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no 2 learner steps in 50 s')), 50_000)
      }),
    ]).finally(() => clearTimeout(timer))
    const store = await WeightStore.open(watch, run)
    const rmVersions = await store.versions('reward')
    // Each role's tree, as declared, and the rollout driver answering on its own subject.
    const trees = { learner: pair.learner.children(), rollout: pair.rollout.children() }
    const status = await watch.request(Subjects.rollout(run, '0'), RolloutStatus.make({}), {
      timeoutMs: 10_000,
      replies: new MessageRegistry([RolloutState]),
    })
    return {
      reports,
      groups,
      rmVersions,
      trees,
      rolloutState: status.payload as PayloadOf<typeof RolloutState>,
    }
  } finally {
    await pair?.stop()
    await sub.stop()
    await watch.close()
    rmSync(runDir, { recursive: true, force: true })
  }
}

const values = (reports: Report[], role: string) =>
  reports.filter((r) => r.role === role).map((r) => r.values)

describe('node - dynamic triad wiring', () => {
  const nats = suiteNatsServer('triad-wire-js-')

  it('node - with every switch on, trajectories carry judgements, the reward model trains and publishes, difficulty is reported', async () => {
    assertSwitchesOn(await runTiny(overNats(nats.url), true))
  })

  it('node - in one process on the in-process transport, every switch on: the same wiring', async () => {
    const t = new InProcessTransport()
    assertSwitchesOn(await runTiny(async () => t, true))
  })

  /** What a tiny run with every switch on must show. */
  function assertSwitchesOn({
    reports,
    groups,
    rmVersions,
    trees,
    rolloutState,
  }: Awaited<ReturnType<typeof runTiny>>) {
    assert.ok(groups.length > 0, 'groups went to the stream')
    assert.deepEqual(trees, {
      learner: [
        'run-lock',
        'learner',
        'trajectory-stream',
        'model',
        'reward-model-learner',
        'cold-start',
        'learner-loop',
      ],
      rollout: [
        'env-controller',
        'env-worker/0',
        'policy-weights',
        'policy/0',
        'reward-model',
        'env-adapter',
        'rollout',
      ],
    })
    assert.ok(rolloutState.groups > 0, 'rollout.status counts the groups it finished')
    assert.equal(rolloutState.metrics['rollout/groups'], rolloutState.groups)
    const sample = groups[0]!.samples[0]!
    assert.ok(sample.judgements instanceof Int8Array, 'judgements attached')
    assert.equal(sample.judgements.length, sample.turns * 2)
    assert.equal(sample.judge_prompts?.length, sample.turns)
    for (const v of sample.judgements) assert.ok(v === 1 || v === -1 || v === 0)

    const learner = values(reports, 'learner').filter((v) => v['learner/version'] !== undefined)
    assert.equal(learner.length, 2)
    for (const v of learner) {
      assert.equal(v['triad/switch/step_reward'], 1)
      assert.equal(v['triad/switch/train_reward_model'], 1)
      assert.ok((v['reward/step_judged'] ?? 0) > 0, 'judged steps reached the advantages')
      assert.ok(v['reward_model/step_accuracy'] !== undefined, 'step accuracy against the task labels')
      assert.ok(v['reward_model/step_accuracy']! >= 0 && v['reward_model/step_accuracy']! <= 1)
      assert.ok(v['reward_model/judgements'] !== undefined, 'the reward model took a step')
    }
    assert.ok(Math.max(...rmVersions) > 0, `reward weights published past version 0: ${rmVersions}`)

    const rollout = values(reports, 'rollout')
    assert.ok(
      rollout.some((v) => (v['reward/judge_calls'] ?? 0) > 0),
      'the rollout asked the reward model',
    )
    assert.ok(rollout.every((v) => v['triad/switch/adaptive_tasks'] === 1))
    const adapter = values(reports, 'env-adapter')
    assert.ok(adapter.length > 0, 'the env adapter reported')
    assert.ok(adapter.every((v) => v['env/difficulty/calc'] !== undefined))
  }

  it('node - with every switch off, no judgement, no reward-model training, no difficulty metrics', async () => {
    const { reports, groups, rmVersions, trees } = await runTiny(overNats(nats.url), false)
    assert.ok(groups.length > 0)
    // no reward-model or env-adapter child when their switches are off
    assert.deepEqual(trees.rollout, [
      'env-controller',
      'env-worker/0',
      'policy-weights',
      'policy/0',
      'rollout',
    ])
    for (const g of groups) for (const s of g.samples) assert.equal(s.judgements, undefined)
    const learner = values(reports, 'learner').filter((v) => v['learner/version'] !== undefined)
    assert.equal(learner.length, 2)
    for (const v of learner) {
      assert.equal(v['triad/switch/step_reward'], 0)
      assert.equal(v['triad/switch/train_reward_model'], 0)
      assert.equal(v['reward/step_judged'], 0)
      assert.equal(v['reward_model/step_accuracy'], undefined)
      assert.equal(v['reward_model/judgements'], undefined)
    }
    assert.deepEqual(rmVersions, [])
    const rollout = values(reports, 'rollout')
    assert.ok(rollout.every((v) => v['reward/judge_calls'] === undefined))
    assert.ok(rollout.every((v) => v['triad/switch/adaptive_tasks'] === 0))
    assert.equal(values(reports, 'env-adapter').length, 0)
    assert.ok(reports.every((r) => Object.keys(r.values).every((k) => !k.startsWith('env/difficulty/'))))
  })
})
