import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { Learner, LearnerCheckpointError, type LearnerCore, latestCheckpoint } from '../../../actors/index.ts'
import { createTransformer, DEFAULT_TOKENIZER_SETTINGS, Tokenizer } from '../../../gpu/index.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'

const tokenizer = new Tokenizer(DEFAULT_TOKENIZER_SETTINGS)
const config = {
  layers: 1,
  width: 16,
  heads: 2,
  contextLength: 8,
  vocabSize: tokenizer.vocabSize,
  mlpHidden: 32,
}

/** One group of four samples: prompt 1 2, responses `a a` (reward 1) and `b b` (reward 0). */
function groups(version: number): TrajectoryGroupPayload[] {
  const s = (resp: number[], reward: number) => ({
    tokens: Int32Array.from([1, 2, ...resp]),
    loss_mask: Uint8Array.from([0, 0, 1, 1]),
    logprobs: Float32Array.from([0, 0, -5.5, -5.5]),
    versions: Int32Array.from([-1, -1, version, version]),
    turn_starts: Int32Array.from([2]),
    reward,
    status: 'completed' as const,
    turns: 1,
    metrics: {},
    stale_turns: 0,
  })
  return [
    {
      group_id: `g${version}`,
      task: 'toy',
      index: 0,
      seed: 0,
      difficulty: 0,
      started_version: version,
      samples: [s([40, 41], 1), s([50, 51], 0), s([40, 41], 1), s([50, 51], 0)],
    },
  ]
}

const dirs: string[] = []
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'triad-learner-'))
  dirs.push(d)
  return d
}
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

describe('actors/learner/learner', () => {
  it('learner - steps advance the version, report metrics and checkpoint at the interval', async () => {
    const root = await tempDir()
    const learner = await Learner.create({
      model: createTransformer(config, { seed: 1 }),
      tokenizer,
      lr: 1e-3,
      version: 10,
      checkpointDir: root,
      checkpointEvery: 2,
    })
    const first = await learner.step(groups(10))
    assert.equal(learner.version, 11)
    assert.equal(learner.stepCheckpoint, undefined)
    assert.equal(first['learner/version'], 11)
    assert.equal(first['reward/mean/toy'], 0.5)
    assert.equal(first['staleness/max'], 0)
    assert.ok(first['optim/grad_norm']! > 0)
    const second = await learner.step(groups(10))
    assert.equal(learner.version, 12)
    assert.equal(second['staleness/mean'], 1)
    assert.equal(learner.stepCheckpoint, path.join(root, 'step-000012'))
    assert.deepEqual((await readdir(learner.stepCheckpoint!)).sort(), [
      'config.json',
      'learner.json',
      'model.safetensors',
      'optimizer.safetensors',
      'tokenizer.json',
    ])
    assert.equal(await latestCheckpoint(root), learner.stepCheckpoint)
    learner.dispose()
  })

  it('learner - a loaded checkpoint continues exactly like the learner that saved it', async () => {
    const root = await tempDir()
    const a = await Learner.create({ model: createTransformer(config, { seed: 2 }), tokenizer, lr: 1e-2 })
    await a.step(groups(0))
    const dir = path.join(root, 'ck')
    await a.saveCheckpoint(dir)
    const b = await Learner.create({ model: createTransformer(config, { seed: 99 }), tokenizer, lr: 1e-2 })
    await b.loadCheckpoint(dir)
    assert.equal(b.version, 1)
    assert.deepEqual(await b.weights(), await a.weights())
    // same weights, same moments, same step count: the next step is identical
    const ra = await a.step(groups(1))
    const rb = await b.step(groups(1))
    assert.equal(rb['loss/total'], ra['loss/total'])
    assert.deepEqual(await b.weights(), await a.weights())
    a.dispose()
    b.dispose()
  })

  it('learner - weights() are copies and a copied reference stays frozen (KL grows from 0)', async () => {
    const learner = await Learner.create({
      model: createTransformer(config, { seed: 3 }),
      tokenizer,
      lr: 1e-2,
      reference: 'copy',
      rl: { beta: 0.01 },
    })
    const w = await learner.weights()
    w.embed!.fill(0)
    assert.notEqual((await learner.weights()).embed![0], 0)
    const r1 = await learner.step(groups(0))
    const r2 = await learner.step(groups(1))
    assert.equal(r1['actor/kl_ref'], 0)
    assert.ok(r2['actor/kl_ref']! > 0)
    learner.dispose()
  })

  it('learner - missing, incomplete or mismatched checkpoints are LearnerCheckpointErrors and change nothing', async () => {
    const root = await tempDir()
    const learner = await Learner.create({
      model: createTransformer(config, { seed: 4 }),
      tokenizer,
      lr: 1e-3,
    })
    await assert.rejects(() => learner.loadCheckpoint(path.join(root, 'nope')), LearnerCheckpointError)
    const other = await Learner.create({
      model: createTransformer({ ...config, width: 32 }, { seed: 4 }),
      tokenizer,
      lr: 1e-3,
    })
    const dir = path.join(root, 'wide')
    await other.saveCheckpoint(dir)
    await assert.rejects(
      () => learner.loadCheckpoint(dir),
      (e: unknown) => e instanceof LearnerCheckpointError && /differs/.test(e.message),
    )
    const same = path.join(root, 'same')
    await learner.saveCheckpoint(same)
    await learner.step(groups(0))
    const stepped = await learner.weights()
    await writeFile(path.join(same, 'optimizer.safetensors'), 'garbage')
    await assert.rejects(
      () => learner.loadCheckpoint(same),
      (e: unknown) => e instanceof LearnerCheckpointError && e.path === same,
    )
    assert.deepEqual(await learner.weights(), stepped)
    assert.equal(learner.version, 1)
    await assert.rejects(() => learner.saveCheckpoint(), LearnerCheckpointError)
    learner.dispose()
    other.dispose()
  })
})

/** Compile-time check: the pipeline's learner loop can drive a `Learner` (its `LearnerCore`). */
export const asLearnerCore = (learner: Learner): LearnerCore => learner
