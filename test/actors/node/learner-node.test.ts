import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import {
  connectNats,
  type NodeConfig,
  readLatestCheckpoint,
  startActorSystem,
  startLearnerNode,
  type Transport,
} from '../../../actors/index.ts'
import {
  type NodeHandle,
  NoReadableCheckpointError,
  REWARD_MODEL_CHECKPOINT_DIR,
  RewardModelLearner,
  rlStartingPolicy,
  WeightStore,
  weightsKey,
} from '../../../actors/testing.ts'
import {
  chooseBackend,
  createTransformer,
  getWeights,
  initWeights,
  readCheckpointWeights,
  saveCheckpoint,
  Tokenizer,
} from '../../../gpu/index.ts'
import { type LearnerRolloutPair, startLearnerRolloutPair } from '../../support/learner-rollout-pair.ts'
import { collectMetricsReports } from '../../support/metrics-reports.ts'
import { suiteNatsServer } from '../../support/suite-nats-server.ts'
import { type TinyRecipeChanges, tinyNodeConfig, tinyTriad } from '../../support/tiny-node-config.ts'
import { within } from '../../support/within.ts'

/**
 * A learner of a tiny model with a short cold-start SFT (2 expert episodes per task, 2 sequences a
 * step); `changes` to its model, SFT and RL sections on top.
 */
const sftConfig = (
  run: string,
  runDir: string,
  changes: Pick<TinyRecipeChanges, 'model' | 'sft' | 'rl'> = {},
): NodeConfig =>
  tinyNodeConfig(run, runDir, {
    seed: 5,
    model: { contextLength: 768, ...changes.model },
    tasks: [
      { name: 'calc', difficulty: { start: 1, min: 1, max: 3 } },
      { name: 'maze', difficulty: { start: 1 } },
    ],
    sft: { epochs: 2, batchSize: 2, expertTrajectoriesPerTask: 2, ...changes.sft },
    rl: { ...changes.rl },
  })

/** A run of a tiny model without SFT, step rewards and reward-model training on: the reward model trains each step. */
const triadConfig = (run: string, runDir: string): NodeConfig =>
  tinyNodeConfig(run, runDir, {
    seed: 5,
    model: { contextLength: 384 },
    triad: tinyTriad(false, true),
  })

const sameWeights = (a: Record<string, Float32Array>, b: Record<string, Float32Array>) =>
  Object.keys(a).length === Object.keys(b).length &&
  Object.entries(a).every(([k, v]) => b[k] !== undefined && v.every((x, i) => x === b[k]![i]))

/** Resolves when `check` holds, polled every 50 ms; rejects after `ms` with `what`. */
async function waitFor(check: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('actors/node/learner-node', () => {
  const nats = suiteNatsServer('triad-learner-js-')
  const system = startActorSystem({ name: 'learner-node-test' })
  after(() => system.stop())

  it('learner-node - the cold-start SFT reports every step with its total: sft/step 1..N, sft/steps_total N, each on the sft axis at its SFT step', async () => {
    const run = `sft${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-learner-sft-'))
    const watch = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const { reports, stop: stopReports } = collectMetricsReports(watch, run)
    const lt = await connectNats({ servers: nats.url, run, role: 'learner', id: '0' })
    const learner = await startLearnerNode(system, lt, sftConfig(run, runDir), '0')
    try {
      // The node is started once SFT is done and version 0 is published: every SFT report is out.
      const sft = () => reports.filter((r) => r.values['sft/step'] !== undefined)
      await waitFor(
        () => sft().some((r) => r.values['sft/step'] === r.values['sft/steps_total']),
        10_000,
        () => JSON.stringify(sft().map((r) => r.values)),
      )
      const totals = new Set(sft().map((r) => r.values['sft/steps_total']))
      assert.equal(totals.size, 1, `one total: ${[...totals]}`)
      const total = [...totals][0]!
      assert.ok(total >= 2, `two epochs take at least two steps: ${total}`)
      assert.deepEqual(
        sft().map((r) => r.values['sft/step']),
        Array.from({ length: total }, (_, i) => i + 1),
      )
      // Each SFT line carries its SFT step on the sft axis (not the learner's step 0).
      assert.ok(
        sft().every((r) => r.step === r.values['sft/step'] && r.axis === 'sft' && r.role === 'learner'),
        JSON.stringify(sft().map((r) => [r.step, r.axis])),
      )
    } finally {
      await learner.stop()
      await stopReports()
      await lt.close()
      await watch.close()
      rmSync(runDir, { recursive: true, force: true })
    }
  })

  it('learner-node - the SFT trains on sft.expertTrajectoriesPerTask per task while the tokenizer learns from more, and stops at sft.maxSteps', async () => {
    const run = `sftn${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-learner-sftn-'))
    const lt = await connectNats({ servers: nats.url, run, role: 'learner', id: '0' })
    const config = sftConfig(run, runDir, { model: { merges: 8 }, sft: { epochs: 3, steps: 1 } })
    const lines: string[] = []
    const learner = await startLearnerNode(system, lt, config, '0', { log: (line) => lines.push(line) })
    try {
      // The node is started once SFT is done: both lines are written.
      assert.ok(
        lines.includes('tokenizer: 272 tokens (8 byte-pair merges learned from 128 expert episodes)'),
        lines.join('\n'),
      )
      assert.ok(
        lines.some((l) =>
          /^SFT: 1 steps on 4 trajectories \(0 from sft.datasets, 0 cut to the context, 0 dropped: ended in task_error\), final loss \d/.test(
            l,
          ),
        ),
        lines.join('\n'),
      )
    } finally {
      await learner.stop()
      await lt.close()
      rmSync(runDir, { recursive: true, force: true })
    }
  })

  it('learner-node - a resumed learner restores the reward model of its checkpoint and publishes those weights; a truncated latest checkpoint is skipped, saying so, for the one before; none readable is NoReadableCheckpointError naming each file', async () => {
    const run = `rmres${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-learner-rm-'))
    const config = triadConfig(run, runDir)
    const connect = (role: string) => connectNats({ servers: nats.url, run, role, id: '0' })
    const watch = await connect('test')
    let pair: LearnerRolloutPair | undefined
    let lt: Transport | undefined
    let learner: NodeHandle | undefined
    try {
      // Two learner steps with the reward model training beside the policy, checkpointed.
      pair = await startLearnerRolloutPair(config, connect)
      await within(pair.learner.done, 60_000, 'two learner steps')
      await pair.stop()
      const latest = readLatestCheckpoint(join(runDir, 'checkpoints'))
      assert.equal(latest?.version, 2)
      const rmDir = join(latest!.dir, REWARD_MODEL_CHECKPOINT_DIR)
      const saved = (await readCheckpointWeights(rmDir)).weights
      const state = JSON.parse(readFileSync(join(rmDir, 'reward-model.json'), 'utf8')) as { updates: number }
      assert.ok(state.updates > 0, 'the reward model was trained')
      await chooseBackend({ log: () => {} })
      const seeded = await new RewardModelLearner(
        { config: { ...config.model, vocabSize: new Tokenizer().vocabSize }, tokenizer: new Tokenizer() },
        config.seed,
        config.rl.lr,
        config.triad!,
      ).weights()
      assert.ok(!sameWeights(saved, seeded), 'the checkpoint holds trained weights, not the seed ones')

      // The learner restarted on the same run directory: nothing left to do, but the reward model
      // it announces at version 2 is the one of the checkpoint.
      lt = await connect('learner')
      learner = await startLearnerNode(system, lt, config, '0')
      await within(learner.done, 30_000, 'the resumed learner')
      const store = await WeightStore.open(watch, run)
      const published = await store.load({ key: weightsKey('reward', 2) })
      assert.ok(sameWeights(published, saved), 'the resumed learner published the checkpoint reward model')
      await learner.stop()
      learner = undefined

      // step-2's weights cut in half (a disk that filled up, a copy cut short): the learner says so
      // and resumes from step-1 (the run keeps every checkpoint here), its reward model included.
      const checkpoints = join(runDir, 'checkpoints')
      const bad = join(checkpoints, 'step-2', 'model.safetensors')
      truncateSync(bad, Math.floor(statSync(bad).size / 2))
      const lines: string[] = []
      learner = await startLearnerNode(system, lt, { ...config, maxSteps: 1 }, '0', {
        log: (l) => lines.push(l),
      })
      await within(learner.done, 30_000, 'the learner resumed from step-1')
      const skipped = lines.find((l) => l.startsWith('skipping step-2: '))
      assert.ok(skipped, lines.join('\n'))
      assert.match(
        skipped,
        new RegExp(`^skipping step-2: it cannot be read \\(${bad}: .+\\); trying step-1$`),
      )
      assert.ok(lines.includes(`resuming from ${join(checkpoints, 'step-1')} (version 1)`), lines.join('\n'))
      const rmDir1 = join(checkpoints, 'step-1', REWARD_MODEL_CHECKPOINT_DIR)
      assert.ok(
        lines.some((l) => l.startsWith(`reward model restored from ${rmDir1} (`)),
        lines.join('\n'),
      )
      await learner.stop()
      learner = undefined

      // step-1 broken too: nothing to resume from, and the SFT is not a silent substitute.
      const bad1 = join(checkpoints, 'step-1', 'optimizer.safetensors')
      truncateSync(bad1, 4)
      await assert.rejects(startLearnerNode(system, lt, config, '0', { log: () => {} }), (err: Error) => {
        assert.ok(err instanceof NoReadableCheckpointError)
        assert.equal(err.restartable, false)
        assert.ok(
          err.message.startsWith(
            `no step checkpoint in ${checkpoints} can be read, so the run cannot resume: step-2: ${bad}: `,
          ),
          err.message,
        )
        assert.ok(
          err.message.includes(
            `; step-1: ${join(checkpoints, 'step-1')}: cannot read: ${bad1}: file too short (4 bytes)`,
          ),
          err.message,
        )
        return true
      })
      assert.ok(existsSync(bad) && existsSync(bad1), 'nothing deleted')
    } finally {
      await pair?.stop()
      await learner?.stop()
      await lt?.close()
      await watch.close()
      rmSync(runDir, { recursive: true, force: true })
    }
  })

  it('learner-node - with kl.beta > 0 the learner of a fresh run steps against the SFT it just trained as the reference (actor/kl_ref)', async () => {
    const run = `kl${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-learner-kl-'))
    // A fresh run with a cold-start SFT: the reference must be read after the SFT wrote
    // checkpoints/sft (read before, it was the seeded random init: kl_ref ~5 nats at step 1).
    const config = sftConfig(run, runDir, { rl: { kl: { beta: 0.1 } } })
    const connect = (role: string) => connectNats({ servers: nats.url, run, role, id: '0' })
    const watch = await connect('test')
    const { reports, stop: stopReports } = collectMetricsReports(watch, run)
    let pair: LearnerRolloutPair | undefined
    try {
      pair = await startLearnerRolloutPair(config, connect)
      await within(pair.learner.done, 60_000, 'two learner steps with the KL term')
      await waitFor(
        () => reports.filter((r) => r.values['actor/kl_ref'] !== undefined).length >= 2,
        10_000,
        () => JSON.stringify(reports.map((r) => [r.role, r.step, r.values['batch/trained_tokens']])),
      )
      const kl = reports.filter((r) => r.values['actor/kl_ref'] !== undefined).sort((a, b) => a.step - b.step)
      // Step 1 trains the starting weights: identical to the reference (not some other model of
      // the same shape), so the KL estimate is exactly 0; every later step reports it too.
      assert.equal(kl[0]!.step, 1)
      assert.equal(kl[0]!.values['actor/kl_ref'], 0)
      assert.ok(kl.every((r) => r.values['actor/kl_ref']! >= 0 && Number.isFinite(r.values['actor/kl_ref'])))
    } finally {
      await pair?.stop()
      await stopReports()
      await watch.close()
      rmSync(runDir, { recursive: true, force: true })
    }
  })

  it('learner-node - the KL reference is the SFT checkpoint when there is one, else the seeded initial weights', async () => {
    await chooseBackend({ log: () => {} })
    const dir = mkdtempSync(join(tmpdir(), 'triad-learner-ref-'))
    const tokenizer = new Tokenizer()
    const modelConfig = { layers: 1, width: 16, heads: 2, contextLength: 64, vocabSize: tokenizer.vocabSize }
    try {
      const sftDir = join(dir, 'sft')
      const seeded = await rlStartingPolicy(sftDir, modelConfig, 3)
      assert.ok(
        sameWeights(await getWeights(seeded), initWeights(modelConfig, 3)),
        'no SFT: the seeded weights',
      )
      const sft = createTransformer(modelConfig, { weights: initWeights(modelConfig, 11) })
      await saveCheckpoint(sftDir, sft, { tokenizer })
      const reference = await rlStartingPolicy(sftDir, modelConfig, 3)
      assert.ok(sameWeights(await getWeights(reference), await getWeights(sft)), 'the SFT checkpoint')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
