import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  Learner,
  LearnerCheckpointError,
  type LearnerCore,
  latestCheckpoint,
} from '../../../actors/testing.ts'
import {
  createTransformer,
  disposeTransformer,
  getWeights,
  type LoraTarget,
  saveCheckpoint,
  Tokenizer,
} from '../../../gpu/index.ts'
import { DEFAULT_TOKENIZER_SETTINGS, forward } from '../../../gpu/testing.ts'
import type { TrajectoryGroupPayload } from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

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
  before(async () => {
    await useTestBackend()
  })

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

  it('learner - LoRA: steps train the adapters alone, checkpoints hold them, and a resume continues exactly', async () => {
    const root = await tempDir()
    const baseDir = path.join(root, 'base')
    const base = createTransformer(config, { seed: 7 })
    await saveCheckpoint(baseDir, base, { tokenizer })
    const baseWeights = await getWeights(base)
    const lora = { rank: 2, alpha: 4, targets: ['q_proj', 'up_proj', 'down_proj'] as LoraTarget[] }
    const loraModel = (seed: number) =>
      createTransformer(config, { weights: baseWeights, lora, seed, base: baseDir })
    // a copied reference under LoRA shares the frozen base and keeps the starting adapters
    const c = await Learner.create({
      model: loraModel(1),
      tokenizer,
      lr: 1e-2,
      reference: 'copy',
      rl: { beta: 0.01 },
    })
    assert.equal(c.reference?.frozen.get('embed'), c.model.frozen.get('embed'))
    await c.step(groups(0))
    assert.ok((await c.step(groups(1)))['actor/kl_ref']! > 0, 'the adapters moved away from the reference')
    c.dispose()
    disposeTransformer(c.model)

    const a = await Learner.create({ model: loraModel(1), tokenizer, lr: 1e-2 })
    await a.step(groups(0))
    await a.step(groups(1))
    assert.deepEqual(Object.keys(await a.weights()).sort(), [...a.model.params.keys()].sort())
    for (const [name, v] of a.model.frozen) assert.deepEqual(v.dataSync(), baseWeights[name], name)
    const dir = path.join(root, 'ck')
    await a.saveCheckpoint(dir)
    assert.deepEqual((await readdir(dir)).sort(), [
      'adapter_config.json',
      'adapter_model.safetensors',
      'config.json',
      'learner.json',
      'optimizer.safetensors',
      'tokenizer.json',
    ])
    const b = await Learner.create({
      model: loraModel(99),
      tokenizer,
      lr: 1e-2,
      reference: 'copy',
      rl: { beta: 0.01 },
    })
    await b.loadCheckpoint(dir)
    assert.equal(b.version, 2)
    assert.deepEqual(await b.weights(), await a.weights())
    const other = await Learner.create({
      model: createTransformer(config, { weights: baseWeights, lora: { ...lora, rank: 3 }, base: baseDir }),
      tokenizer,
      lr: 1e-2,
    })
    await assert.rejects(
      other.loadCheckpoint(dir),
      (err: Error) => err instanceof LearnerCheckpointError && /LoRA settings .* differ/.test(err.message),
    )
    // The same start: identical logits. The step then agrees to float32 rounding (1e-6).
    const probe = () =>
      tf.tensor2d(
        [
          [1, 2, 40],
          [1, 2, 50],
        ],
        undefined,
        'int32',
      )
    assert.deepEqual(forward(a.model, probe()).dataSync(), forward(b.model, probe()).dataSync())
    const ra = await a.step(groups(2))
    const rb = await b.step(groups(2))
    assert.ok(Math.abs(rb['loss/total']! - ra['loss/total']!) <= 1e-6) // a mean of terms of size ~1 that cancel
    const [wa, wb] = [await a.weights(), await b.weights()]
    for (const [name, data] of Object.entries(wa))
      assert.ok(
        data.every((x, i) => Math.abs(x - wb[name]![i]!) <= 1e-6),
        `${name} after the resumed step`,
      )
    for (const l of [a, b, other]) l.dispose()
    disposeTransformer(base)
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
