import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  CheckpointError,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  getWeights,
  learnTaskTokenizer,
  loadCheckpoint,
  ShapeError,
  saveCheckpoint,
  setWeights,
  Tokenizer,
  type TransformerConfig,
} from '../../gpu/index.ts'
import { forward } from '../../gpu/testing.ts'
import { useTestBackend } from '../support/test-backend.ts'

const tokenizer = new Tokenizer()
const config: TransformerConfig = {
  layers: 1,
  width: 8,
  heads: 2,
  contextLength: 16,
  vocabSize: tokenizer.vocabSize,
}

describe('gpu/checkpoint', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'triad-ckpt-'))
  })
  after(async () => {
    await useTestBackend()
    await rm(dir, { recursive: true, force: true })
  })

  it('checkpoint - save then load gives identical weights, config and tokenizer', async () => {
    await useTestBackend()
    const model = createTransformer(config, { seed: 42 })
    await saveCheckpoint(path.join(dir, 'a'), model, { tokenizer, metadata: { step: '3' } })
    const loaded = await loadCheckpoint(path.join(dir, 'a'))
    assert.deepEqual(loaded.model.config, model.config)
    assert.deepEqual(loaded.tokenizer.settings, tokenizer.settings)
    assert.deepEqual(loaded.metadata, { format: 'pt', step: '3' })
    const a = await getWeights(model)
    const b = await getWeights(loaded.model)
    assert.deepEqual(Object.keys(b), Object.keys(a))
    for (const name of Object.keys(a)) assert.deepEqual(b[name], a[name], name)
    const cfg = JSON.parse(await readFile(path.join(dir, 'a', 'config.json'), 'utf8'))
    assert.equal(cfg.architecture, 'triad-decoder')
    disposeTransformer(model)
    disposeTransformer(loaded.model)
  })

  it('checkpoint - a tokenizer with merges is restored with them', async () => {
    await useTestBackend()
    const text = 'Go west. Go east. Go west again.'
    const merged = learnTaskTokenizer([text, text], 6)
    const model = createTransformer({ ...config, vocabSize: merged.vocabSize }, { seed: 3 })
    await saveCheckpoint(path.join(dir, 'm'), model, { tokenizer: merged })
    const loaded = await loadCheckpoint(path.join(dir, 'm'))
    assert.equal(loaded.tokenizer.vocabSize, 270)
    assert.deepEqual(loaded.tokenizer.settings.merges, merged.settings.merges)
    assert.deepEqual([...loaded.tokenizer.encode(text)], [...merged.encode(text)])
    assert.equal(loaded.model.config.vocabSize, 270)
    disposeTransformer(model)
    disposeTransformer(loaded.model)
  })

  it('checkpoint - saved under the test backend, loads under cpu with the same logits', async () => {
    await useTestBackend()
    const model = createTransformer(config, { seed: 5 })
    const tokens = [[1, 2, 3, 200, 259]]
    const savedLogits = await forward(model, tf.tensor2d(tokens, [1, 5], 'int32')).data()
    await saveCheckpoint(path.join(dir, 'b'), model, { tokenizer })
    disposeTransformer(model)
    await chooseBackend({ backend: 'cpu', log: () => {} })
    const loaded = await loadCheckpoint(path.join(dir, 'b'))
    const cpuLogits = await forward(loaded.model, tf.tensor2d(tokens, [1, 5], 'int32')).data()
    for (let i = 0; i < savedLogits.length; i++) assert.ok(Math.abs(savedLogits[i]! - cpuLogits[i]!) < 1e-4)
    disposeTransformer(loaded.model)
    await useTestBackend()
  })

  it('checkpoint - weights go to and from a flat record', async () => {
    const a = createTransformer(config, { seed: 1 })
    const b = createTransformer(config, { seed: 2 })
    const wa = await getWeights(a)
    setWeights(b, wa)
    const wb = await getWeights(b)
    for (const name of Object.keys(wa)) assert.deepEqual(wb[name], wa[name])
    const { embed: _dropped, ...missing } = wa
    assert.throws(() => setWeights(b, missing), ShapeError)
    assert.throws(() => setWeights(b, { ...wa, extra: new Float32Array(1) }), /a parameter of this model/)
    assert.throws(() => setWeights(b, { ...wa, embed: new Float32Array(3) }), ShapeError)
    disposeTransformer(a)
    disposeTransformer(b)
  })

  it('checkpoint - broken checkpoints are CheckpointErrors', async () => {
    await assert.rejects(loadCheckpoint(path.join(dir, 'missing')), CheckpointError)
    const model = createTransformer(config, { seed: 1 })
    await saveCheckpoint(path.join(dir, 'c'), model, { tokenizer })
    disposeTransformer(model)
    const cfgFile = path.join(dir, 'c', 'config.json')
    const good = await readFile(cfgFile, 'utf8')
    await writeFile(cfgFile, JSON.stringify({ ...JSON.parse(good), width: 16 }))
    await assert.rejects(loadCheckpoint(path.join(dir, 'c')), /config wants/)
    await writeFile(cfgFile, JSON.stringify({ ...JSON.parse(good), architecture: 'gpt2' }))
    await assert.rejects(loadCheckpoint(path.join(dir, 'c')), /not triad-decoder/)
    await writeFile(cfgFile, good)
    await writeFile(
      path.join(dir, 'c', 'tokenizer.json'),
      JSON.stringify({ kind: 'byte', specialTokens: ['<pad>'] }),
    )
    await assert.rejects(loadCheckpoint(path.join(dir, 'c')), CheckpointError)
  })
})
