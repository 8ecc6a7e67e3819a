import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  type NatsServer,
  readLatestCheckpoint,
  startNatsServer,
  type Transport,
} from '../../../actors/index.ts'
import {
  CheckpointPruneError,
  ensureTrajectoryStream,
  type LearnerCore,
  LearnerLoop,
  type LearnerLoopSettings,
  openTrajectoryConsumer,
  openTrajectoryPublisher,
  readAckRecords,
} from '../../../actors/testing.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'

/** A well-formed group of two one-turn samples generated at `version`. */
function group(id: string, version = 0): TrajectoryGroupPayload {
  return {
    group_id: id,
    task: 'calc',
    index: 0,
    seed: 1,
    difficulty: 1,
    started_version: version,
    samples: [0, 1].map((reward) => ({
      tokens: Int32Array.from([1, 2, 3, 4]),
      loss_mask: Uint8Array.from([0, 0, 1, 1]),
      logprobs: Float32Array.from([0, 0, -0.5, -1]),
      versions: Int32Array.from([-1, -1, version, version]),
      turn_starts: Int32Array.from([2]),
      reward,
      status: 'completed' as const,
      turns: 1,
      metrics: {},
      stale_turns: 0,
    })),
  }
}

/** A learner core without tensors: a step increments the version; a checkpoint is a marker file. */
function countingCore(): LearnerCore {
  let version = 0
  return {
    get version() {
      return version
    },
    step: async () => {
      version++
      return {}
    },
    weights: async () => ({}),
    saveCheckpoint: async (dir) => {
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, 'version'), String(version))
    },
  }
}

/** The same loop tests on both trajectory streams: JetStream on a real server, and in process. */
const media: { name: string; open: () => Promise<{ t: Transport; close: () => Promise<void> }> }[] = [
  {
    name: 'a real JetStream stream',
    open: async () => {
      const nats: NatsServer = await startNatsServer({
        storeDir: mkdtempSync(join(tmpdir(), 'triad-loop-')),
        monitorPort: false,
      })
      const t = await connectNats({ servers: nats.url, run: 'loop', role: 'test', id: '0' })
      return {
        t,
        close: async () => {
          await t.close()
          await nats.stop()
        },
      }
    },
  },
  {
    name: 'the in-process stream',
    open: async () => {
      const t = new InProcessTransport()
      return { t, close: () => t.close() }
    },
  },
]

for (const medium of media)
  describe(`actors/pipeline/learner-loop - checkpoints on ${medium.name}`, () => {
    let t: Transport
    let close: () => Promise<void>
    before(async () => {
      ;({ t, close } = await medium.open())
    })
    after(async () => {
      await close()
    })

    /** A loop of one group per step, checkpointing every 2 steps, over `groups` published groups. */
    async function loopOver(
      run: string,
      groups: number,
      report: (version: number) => void = () => {},
      more: Partial<LearnerLoopSettings> = {},
    ) {
      await ensureTrajectoryStream(t, { run, maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, run)
      for (let i = 0; i < groups; i++) await pub.publish(group(`g${i}`))
      const consumer = await openTrajectoryConsumer(t, run)
      const checkpointDir = join(mkdtempSync(join(tmpdir(), 'triad-loop-ckpt-')), 'checkpoints')
      const loop = new LearnerLoop(
        countingCore(),
        consumer,
        {
          minBatchGroups: 1,
          maxBatchGroups: 1,
          stalenessBound: 100,
          checkpointEvery: 2,
          checkpointDir,
          waitMs: 1_000,
          ...more,
        },
        async () => {},
        (_values, version) => report(version),
      )
      return { loop, consumer, checkpointDir }
    }

    it('learner-loop - a step budget off the checkpoint interval still checkpoints the last step', async () => {
      const { loop, consumer, checkpointDir } = await loopOver('budget', 3)
      await loop.run(3)
      assert.equal(loop.counts.steps, 3)
      assert.equal(readLatestCheckpoint(checkpointDir)?.version, 3)
      assert.ok(existsSync(join(checkpointDir, 'step-2')) && existsSync(join(checkpointDir, 'step-3')))
      // Every group is acknowledged with the checkpoint that holds its step.
      assert.deepEqual(
        readAckRecords(checkpointDir).map((r) => [r.version, r.used.length]),
        [
          [2, 2],
          [3, 1],
        ],
      )
      assert.equal(await consumer.pending(), 0)
    })

    it('learner-loop - a budget on the interval writes no second checkpoint of the same step', async () => {
      const { loop, checkpointDir } = await loopOver('even', 2)
      await loop.run(2)
      assert.deepEqual(
        readAckRecords(checkpointDir).map((r) => r.version),
        [2],
      )
    })

    it('learner-loop - keepCheckpoints: after each checkpoint only the newest ones stay, sft/ untouched', async () => {
      const { loop, consumer, checkpointDir } = await loopOver('keep', 7, () => {}, {
        checkpointEvery: 1,
        keepCheckpoints: 2,
      })
      mkdirSync(join(checkpointDir, 'sft'), { recursive: true })
      await loop.run(7)
      assert.deepEqual(readdirSync(checkpointDir).sort(), [
        'acks.jsonl',
        'latest.json',
        'sft',
        'step-6',
        'step-7',
      ])
      assert.equal(readFileSync(join(checkpointDir, 'step-7', 'version'), 'utf8'), '7')
      // The audit still lists every acknowledged group.
      assert.deepEqual(
        readAckRecords(checkpointDir).map((r) => [r.version, r.used.length]),
        [1, 2, 3, 4, 5, 6, 7].map((v) => [v, 1]),
      )
      assert.equal(await consumer.pending(), 0)
    })

    it('learner-loop - evaluationEvery adds checkpoints at its multiples (every 2 and 3: steps 2, 3, 4, 6, 7)', async () => {
      const { loop, checkpointDir } = await loopOver('evalevery', 7, () => {}, { evaluationEvery: 3 })
      await loop.run(7)
      assert.deepEqual(
        readAckRecords(checkpointDir).map((r) => r.version),
        [2, 3, 4, 6, 7],
      )
    })

    it('learner-loop - keepCheckpoints below 1 is refused when the loop is made', async () => {
      await assert.rejects(
        loopOver('keep0', 0, () => {}, { keepCheckpoints: 0 }),
        (err: Error) =>
          err instanceof CheckpointPruneError && /keep must be an integer >= 1/.test(err.message),
      )
    })

    it('learner-loop - stop() after a step off the interval checkpoints that step', async () => {
      // The loop's report of its first step is the event to stop on.
      let stepped = () => {}
      const firstStep = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no step within 10 s')), 10_000)
        stepped = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      const { loop, checkpointDir } = await loopOver('stopped', 1, () => stepped())
      const running = loop.run()
      await firstStep
      loop.stop()
      await running
      assert.equal(readLatestCheckpoint(checkpointDir)?.version, 1)
    })

    it('learner-loop - stop() while the loop waits for groups ends the wait at once, then checkpoints the step before', {
      timeout: 10_000,
    }, async () => {
      let stepped = () => {}
      const firstStep = new Promise<void>((resolve) => {
        stepped = resolve
      })
      // One group, then a wait of a minute for the next (a stopped rollout side sends none).
      const { loop, consumer, checkpointDir } = await loopOver('stopwait', 1, () => stepped(), {
        checkpointEvery: 10,
        waitMs: 60_000,
      })
      const running = loop.run()
      await firstStep
      loop.stop()
      await running
      assert.equal(loop.counts.steps, 1)
      assert.equal(readLatestCheckpoint(checkpointDir)?.version, 1)
      assert.equal(await consumer.pending(), 0)
    })
    it('learner-loop - stopped between latest.json and its audit line: the resumed loop writes the line once, and the groups that come again are skipped, not trained twice', async () => {
      const run = `repair-${medium.name.length}`
      await ensureTrajectoryStream(t, { run, maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, run)
      const seqs = [await pub.publish(group('r0')), await pub.publish(group('r1'))]
      const checkpointDir = join(mkdtempSync(join(tmpdir(), 'triad-loop-repair-')), 'checkpoints')
      mkdirSync(join(checkpointDir, 'step-2'), { recursive: true })
      // What a learner leaves when it is stopped after renaming latest.json (the groups are used)
      // and before its audit line and its acknowledgement: no acks.jsonl, both groups still pending.
      writeFileSync(
        join(checkpointDir, 'latest.json'),
        JSON.stringify({ version: 2, usedSeqs: seqs, dir: join(checkpointDir, 'step-2') }),
      )
      const settings: LearnerLoopSettings = {
        minBatchGroups: 1,
        maxBatchGroups: 4,
        stalenessBound: 100,
        checkpointEvery: 1,
        checkpointDir,
        waitMs: 1_000,
      }
      const resume = async () =>
        new LearnerLoop(
          countingCore(),
          await openTrajectoryConsumer(t, run),
          settings,
          async () => {},
          () => {},
          readLatestCheckpoint(checkpointDir),
        )
      const loop = await resume()
      assert.deepEqual(readAckRecords(checkpointDir), [
        { version: 2, used: seqs, dropped: [], duplicates: [] },
      ])
      assert.equal(await loop.runOnce(), false)
      assert.equal(loop.counts.steps, 0)
      assert.equal(loop.counts.duplicatesSkipped, 2)
      // A second resume (the one that trained the groups again before) finds the line: no copy.
      await resume()
      const records = readAckRecords(checkpointDir)
      assert.deepEqual(
        records.map((r) => r.used),
        [seqs, []],
      )
      assert.deepEqual(records[1]!.duplicates.sort(), seqs)
    })

    it('learner-loop - a step whose end fails after its update, or whose weights publish fails (NATS restarting), is kept: it counts toward the budget and its group is held, not trained again; one that fails before its update gives its group back', async () => {
      const run = `publishfail-${medium.name.length}`
      await ensureTrajectoryStream(t, { run, maxGroups: 10 })
      const pub = openTrajectoryPublisher(t, run)
      const seqs: number[] = []
      for (let i = 0; i < 4; i++) seqs.push(await pub.publish(group(`p${i}`)))
      const checkpointDir = join(mkdtempSync(join(tmpdir(), 'triad-loop-pubfail-')), 'checkpoints')
      const counting = countingCore()
      // Step 2 fails at its end, after the update (the reward model's weights publish); step 3
      // fails before its update; the weights publish of step 1 fails.
      let steps = 0
      const core: LearnerCore = {
        ...counting,
        get version() {
          return counting.version
        },
        step: async (groups) => {
          steps++
          if (steps === 3) throw new Error('connection closed: disconnect before the update')
          const out = await counting.step(groups)
          if (steps === 2) throw new Error('connection closed: disconnect after the update')
          return out
        },
      }
      let publishes = 0
      const loop = new LearnerLoop(
        core,
        await openTrajectoryConsumer(t, run),
        {
          minBatchGroups: 1,
          maxBatchGroups: 1,
          stalenessBound: 100,
          checkpointEvery: 10,
          checkpointDir,
          waitMs: 1_000,
        },
        async () => {
          if (publishes++ === 0) throw new Error('connection closed: disconnect')
        },
        () => {},
      )
      const errors: unknown[] = []
      await loop.run(3, (err) => errors.push(err))
      assert.equal(errors.length, 3)
      assert.equal(loop.counts.steps, 3)
      assert.equal(counting.version, 3)
      // The group of the step that failed before its update is used by the next step (with the
      // one that step takes: the loop always asks the stream for at least one).
      assert.equal(loop.counts.groups, 4)
      assert.deepEqual(readAckRecords(checkpointDir), [
        { version: 3, used: seqs, dropped: [], duplicates: [] },
      ])
    })

    it('learner-loop - a step that fails at its end on a checkpoint multiple (NATS restarting) gets its weights published and its checkpoint before the loop takes more groups, so the held groups are acknowledged and the stream (its ack-pending limit sized for checkpointEvery steps) hands out more', async () => {
      const run = `catchup-${medium.name.length}`
      // The stream's consumer allows 2 unacknowledged groups: the 2 steps of one checkpoint.
      await ensureTrajectoryStream(t, { run, maxGroups: 2 })
      const pub = openTrajectoryPublisher(t, run)
      const seqs = [await pub.publish(group('c0')), await pub.publish(group('c1'))]
      const checkpointDir = join(mkdtempSync(join(tmpdir(), 'triad-loop-catchup-')), 'checkpoints')
      const counting = countingCore()
      let steps = 0
      const core: LearnerCore = {
        ...counting,
        get version() {
          return counting.version
        },
        step: async (groups) => {
          const out = await counting.step(groups)
          // Step 2 fails at its end, after its update (the reward model's weights publish).
          if (++steps === 2) throw new Error('timeout')
          return out
        },
      }
      const published: number[] = []
      const loop = new LearnerLoop(
        core,
        await openTrajectoryConsumer(t, run),
        {
          minBatchGroups: 1,
          maxBatchGroups: 1,
          stalenessBound: 100,
          checkpointEvery: 2,
          checkpointDir,
          waitMs: 1_000,
        },
        async (version) => {
          published.push(version)
        },
        () => {},
      )
      assert.equal(await loop.runOnce(), true)
      await assert.rejects(loop.runOnce(), /timeout/)
      assert.equal(readLatestCheckpoint(checkpointDir), undefined)
      // The next call finishes step 2 first: its weights, its checkpoint, its acknowledgements.
      assert.equal(await loop.runOnce(), false)
      assert.deepEqual(published, [1, 2])
      assert.equal(readLatestCheckpoint(checkpointDir)?.version, 2)
      assert.deepEqual(readAckRecords(checkpointDir), [
        { version: 2, used: seqs, dropped: [], duplicates: [] },
      ])
      // Acknowledged, the groups leave the stream: a third one is handed out and stepped on.
      const third = await pub.publish(group('c2'), 5_000)
      assert.equal(await loop.runOnce(), true)
      assert.equal(counting.version, 3)
      assert.equal(loop.counts.groups, 3)
      await loop.checkpoint()
      assert.deepEqual(readAckRecords(checkpointDir).at(-1), {
        version: 3,
        used: [third],
        dropped: [],
        duplicates: [],
      })
    })

    it('learner-loop - a group handed out again while the loop holds it (its ack wait passed) is not used a second time', async () => {
      const run = `held-${medium.name.length}`
      await ensureTrajectoryStream(t, { run, maxGroups: 10, ackWaitMs: 300 })
      const seq = await openTrajectoryPublisher(t, run).publish(group('h0'))
      const consumer = await openTrajectoryConsumer(t, run)
      const checkpointDir = join(mkdtempSync(join(tmpdir(), 'triad-loop-held-')), 'checkpoints')
      const loop = new LearnerLoop(
        countingCore(),
        consumer,
        {
          minBatchGroups: 1,
          maxBatchGroups: 4,
          stalenessBound: 100,
          checkpointEvery: 10,
          checkpointDir,
          waitMs: 1_500,
        },
        async () => {},
        () => {},
      )
      assert.equal(await loop.runOnce(), true)
      // This wait outlasts the 300 ms ack wait: the held group is handed out again within it.
      assert.equal(await loop.runOnce(), false)
      assert.equal(loop.counts.steps, 1)
      assert.equal(loop.counts.groups, 1)
      assert.equal(loop.counts.duplicatesSkipped, 0)
      await loop.checkpoint()
      assert.deepEqual(readAckRecords(checkpointDir), [
        { version: 1, used: [seq], dropped: [], duplicates: [] },
      ])
      assert.equal(await consumer.pending(), 0)
    })
  })
