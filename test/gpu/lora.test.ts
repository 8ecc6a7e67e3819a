import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  CheckpointError,
  ConfigError,
  createTransformer,
  disposeTransformer,
  exportHf,
  fullConfig,
  fullLoraConfig,
  getWeights,
  initAdapters,
  LoraTarget,
  loadCheckpointModel,
  loadHfModel,
  lossAndGrads,
  readCheckpointWeights,
  saveCheckpoint,
  type Transformer,
  tokenLogprobs,
  withAdapters,
} from '../../gpu/index.ts'
import { adapterShapes, forward, mergeAdapters } from '../../gpu/testing.ts'
import { type TestHfSpec, writeHfCheckpoint } from '../support/hf-checkpoint.ts'
import { useTestBackend } from '../support/test-backend.ts'

/** A Qwen3-layout model: GQA, head size above width / heads, q/k norms; and Qwen2's q/k/v biases. */
const SPEC: TestHfSpec = {
  architecture: 'Qwen3ForCausalLM',
  hidden_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  intermediate_size: 24,
  vocab_size: 40,
  max_position_embeddings: 32,
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
}
const CONFIG = fullConfig({
  layers: 2,
  width: 16,
  heads: 4,
  kvHeads: 2,
  headDim: 8,
  mlpHidden: 24,
  vocabSize: 40,
  contextLength: 32,
  qkvBias: true,
  qkNorm: true,
  tiedEmbeddings: false,
})
const IDS = [[3, 17, 0, 39, 8, 8, 21, 5, 30, 12, 2]]

const logitsOf = (model: Transformer, ids = IDS) =>
  tf.tidy(() => forward(model, tf.tensor2d(ids, undefined, 'int32')).arraySync() as number[][][])

function maxAbsDiff(a: number[][][], b: number[][][]): number {
  return Math.max(...a.flat(2).map((v, i) => Math.abs(v - b.flat(2)[i]!)))
}

/** One AdamW step on the summed log-likelihood of `IDS` shifted by one. */
async function trainStep(model: Transformer, optimizer: AdamW, lr = 0.05): Promise<void> {
  const tokens = tf.tensor2d([IDS[0]!.slice(0, -1)], undefined, 'int32')
  const targets = tf.tensor2d([IDS[0]!.slice(1)], undefined, 'int32')
  const { grads } = await lossAndGrads(
    model,
    () => tf.neg(tf.sum(tokenLogprobs(model, tokens, targets))) as tf.Scalar,
  )
  await optimizer.step(grads, lr)
  tf.dispose([tokens, targets, grads])
}

async function frozenWeights(model: Transformer): Promise<Record<string, Float32Array>> {
  const out: Record<string, Float32Array> = {}
  for (const [name, v] of model.frozen) out[name] = ((await v.data()) as Float32Array).slice()
  return out
}

describe('gpu/lora', () => {
  let root: string
  before(async () => {
    await useTestBackend()
    root = await mkdtemp(path.join(tmpdir(), 'triad-lora-'))
  })
  after(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it('settings - defaults and one clear error per bad setting', () => {
    assert.deepEqual(fullLoraConfig({}), {
      rank: 8,
      alpha: 16,
      targets: Object.values(LoraTarget),
      dropout: 0,
    })
    const cases: [object, RegExp][] = [
      [{ rank: 0 }, /^lora\.rank=0: must be a positive integer$/],
      [{ rank: -4 }, /^lora\.rank=-4: must be a positive integer$/],
      [{ rank: 2.5 }, /^lora\.rank=2\.5: must be a positive integer$/],
      [{ alpha: 0 }, /^lora\.alpha=0: must be > 0$/],
      [
        { targets: ['q_proj', 'qkv'] },
        /^lora\.targets="qkv": is not a projection; valid targets: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj$/,
      ],
      [{ targets: [] }, /^lora\.targets=\[\]: name at least one of q_proj/],
      [{ dropout: 1 }, /^lora\.dropout=1: must be in \[0, 1\)$/],
    ]
    for (const [settings, message] of cases)
      assert.throws(
        () => fullLoraConfig(settings),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
      )
    // the same error from the model constructor, with nothing allocated
    const before = tf.memory().numTensors
    assert.throws(() => createTransformer(CONFIG, { lora: { rank: 0 } }), ConfigError)
    assert.equal(tf.memory().numTensors, before)
  })

  it('adapters - one A [in, rank] and B [rank, out] per layer and target', () => {
    const shapes = adapterShapes(
      CONFIG,
      fullLoraConfig({ rank: 3, targets: ['q_proj', 'k_proj', 'o_proj', 'down_proj'] }),
    )
    assert.deepEqual(shapes.slice(0, 8), [
      ['layers.0.q_proj.lora_a', [16, 3]],
      ['layers.0.q_proj.lora_b', [3, 32]],
      ['layers.0.k_proj.lora_a', [16, 3]],
      ['layers.0.k_proj.lora_b', [3, 16]],
      ['layers.0.o_proj.lora_a', [32, 3]],
      ['layers.0.o_proj.lora_b', [3, 16]],
      ['layers.0.down_proj.lora_a', [24, 3]],
      ['layers.0.down_proj.lora_b', [3, 16]],
    ])
    assert.equal(shapes.length, 16)
  })

  it('zero-initialised B - exactly the base model logits, and only the adapters are parameters', () => {
    const weights = createTransformer(CONFIG, { seed: 5 })
    const plain = logitsOf(weights)
    const base = tf.tidy(() =>
      Object.fromEntries([...weights.params].map(([n, v]) => [n, v.dataSync() as Float32Array])),
    )
    const lora = createTransformer(CONFIG, { weights: base, lora: { rank: 4, alpha: 8 }, seed: 9 })
    assert.deepEqual(logitsOf(lora), plain)
    assert.deepEqual(
      [...lora.params.keys()],
      adapterShapes(CONFIG, fullLoraConfig({ rank: 4 })).map(([n]) => n),
    )
    assert.equal(lora.frozen.size, weights.params.size)
    for (const v of lora.frozen.values()) assert.equal(v.trainable, false)
    // A is not zero (else B would get no gradient): uniform in [-1/sqrt(in), 1/sqrt(in)]
    const a = lora.params.get('layers.0.q_proj.lora_a')!.dataSync()
    assert.ok(a.some((x) => x !== 0) && a.every((x) => Math.abs(x) <= 1 / Math.sqrt(16)))
    disposeTransformer(weights)
    disposeTransformer(lora)
  })

  it('a LoRA step - changes every B and no frozen weight, and the optimizer holds adapter moments only', async () => {
    const model = createTransformer(CONFIG, { seed: 1, lora: { rank: 2, alpha: 4 } })
    const frozenBefore = await frozenWeights(model)
    const adaptersBefore = await getWeights(model)
    const optimizer = new AdamW(model.params)
    await trainStep(model, optimizer)
    assert.deepEqual(await frozenWeights(model), frozenBefore)
    const after = await getWeights(model)
    assert.deepEqual(Object.keys(after), Object.keys(adaptersBefore))
    for (const name of Object.keys(after).filter((n) => n.endsWith('lora_b')))
      assert.ok(
        after[name]!.some((x, i) => x !== adaptersBefore[name]![i]),
        `${name} changed`,
      )
    const state = await optimizer.state()
    assert.deepEqual(
      Object.keys(state.tensors).sort(),
      [...model.params.keys()].flatMap((n) => [`m.${n}`, `v.${n}`]).sort(),
    )
    optimizer.dispose()
    disposeTransformer(model)
  })

  it('gradients - through frozen weights and head, each adapter gradient matches central differences', async () => {
    const lora = fullLoraConfig({ rank: 2, alpha: 2 })
    const adapters = initAdapters(CONFIG, lora, 6)
    for (const [n, a] of Object.entries(adapters))
      if (n.endsWith('lora_b')) for (let i = 0; i < a.length; i++) a[i] = 0.2 * Math.cos(i + n.length)
    const weights = randomWeights(8)
    const tokens = tf.tensor2d([IDS[0]!.slice(0, -1)], undefined, 'int32')
    const targets = tf.tensor2d([IDS[0]!.slice(1)], undefined, 'int32')
    const lossOf = (m: Transformer) => tf.neg(tf.sum(tokenLogprobs(m, tokens, targets))) as tf.Scalar
    const model = createTransformer(CONFIG, { weights, lora, adapters })
    const { grads } = await lossAndGrads(model, () => lossOf(model))
    const h = 1e-2
    for (const [name, index] of [
      ['layers.0.q_proj.lora_b', 5],
      ['layers.1.down_proj.lora_a', 7],
      ['layers.0.gate_proj.lora_a', 3],
      ['layers.1.o_proj.lora_b', 11],
    ] as const) {
      const at = (delta: number) => {
        const moved = { ...adapters, [name]: adapters[name]!.slice() }
        moved[name]![index]! += delta
        const m = createTransformer(CONFIG, { weights, lora, adapters: moved })
        const value = tf.tidy(() => lossOf(m).dataSync()[0]!)
        disposeTransformer(m)
        return value
      }
      const numeric = (at(h) - at(-h)) / (2 * h)
      const analytic = grads[name]!.dataSync()[index]!
      assert.ok(Math.abs(analytic) > 1e-3, `${name}[${index}] has a gradient to check (${analytic})`)
      assert.ok(
        Math.abs(numeric - analytic) <= 2e-2 * Math.max(1, Math.abs(analytic)),
        `${name}[${index}]: analytic ${analytic}, central difference ${numeric}`,
      )
    }
    assert.deepEqual(Object.keys(grads).sort(), [...model.params.keys()].sort())
    tf.dispose([grads, tokens, targets])
    disposeTransformer(model)
  })

  it('merge - W + (alpha/rank) A B gives the adapted model logits without adapters', async () => {
    const lora = fullLoraConfig({
      rank: 3,
      alpha: 5,
      targets: ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'down_proj'],
    })
    const base = createTransformer(CONFIG, { seed: 2 })
    const baseWeights = await getWeights(base)
    // random, non-zero B: a trained adapter
    const adapters = initAdapters(CONFIG, lora, 3)
    for (const [n, a] of Object.entries(adapters))
      if (n.endsWith('lora_b')) for (let i = 0; i < a.length; i++) a[i] = Math.sin(i + n.length)
    const adapted = createTransformer(CONFIG, { weights: baseWeights, lora, adapters })
    const merged = createTransformer(CONFIG, { weights: mergeAdapters(baseWeights, adapters, CONFIG, lora) })
    const diff = maxAbsDiff(logitsOf(adapted), logitsOf(merged))
    assert.ok(diff < 1e-4, `max |adapted - merged| = ${diff}`)
    assert.ok(maxAbsDiff(logitsOf(adapted), logitsOf(base)) > 1e-2, 'the adapters change the logits')
    // the untargeted k projection and up projection columns are the base's
    const mergedWeights = mergeAdapters(baseWeights, adapters, CONFIG, lora)
    const qkv = mergedWeights['layers.0.qkv']!
    for (let row = 0; row < 16; row++)
      for (let c = 32; c < 48; c++)
        assert.equal(qkv[row * 64 + c], baseWeights['layers.0.qkv']![row * 64 + c])
    for (const m of [base, adapted, merged]) disposeTransformer(m)
  })

  it('withAdapters - shares the frozen weights, frees only its adapters', async () => {
    const lora = { rank: 2, alpha: 2 }
    const base = createTransformer(CONFIG, { seed: 4 })
    const adapters = initAdapters(CONFIG, fullLoraConfig(lora), 8)
    adapters['layers.1.up_proj.lora_b']!.fill(0.5)
    const own = createTransformer(CONFIG, { weights: await getWeights(base), lora, adapters })
    const shared = withAdapters(base, adapters, lora)
    assert.deepEqual(logitsOf(shared), logitsOf(own))
    assert.equal(shared.frozen.get('embed'), base.params.get('embed'))
    const count = tf.memory().numTensors
    disposeTransformer(shared)
    assert.equal(tf.memory().numTensors, count - shared.params.size)
    assert.deepEqual(logitsOf(base).length, 1) // base still usable
    disposeTransformer(base)
    disposeTransformer(own)
  })

  it('dropout - drops adapter inputs only while gradients are taken', async () => {
    const tokens = tf.tensor2d([IDS[0]!.slice(0, -1)], undefined, 'int32')
    const targets = tf.tensor2d([IDS[0]!.slice(1)], undefined, 'int32')
    const adapters = initAdapters(CONFIG, fullLoraConfig({ rank: 4 }), 1)
    for (const [n, a] of Object.entries(adapters)) if (n.endsWith('lora_b')) a.fill(0.3)
    const weights = randomWeights(5)
    const loss = (m: Transformer) => tf.neg(tf.sum(tokenLogprobs(m, tokens, targets))) as tf.Scalar
    const withDrop = createTransformer(CONFIG, { weights, lora: { rank: 4, dropout: 0.5 }, adapters })
    const without = createTransformer(CONFIG, { weights, lora: { rank: 4, dropout: 0 }, adapters })
    // sampling and scoring never drop
    assert.deepEqual(logitsOf(withDrop), logitsOf(without))
    const a = await lossAndGrads(withDrop, () => loss(withDrop))
    const b = await lossAndGrads(without, () => loss(without))
    assert.notEqual(a.loss, b.loss)
    assert.equal(withDrop.lora?.dropoutSeed, undefined)
    assert.equal(withDrop.lora?.draws, 1)
    tf.dispose([a.grads, b.grads, tokens, targets])
    disposeTransformer(withDrop)
    disposeTransformer(without)
  })

  it('checkpoint - holds the adapters in PEFT layout and a resume reads the same model', async () => {
    const dir = path.join(root, 'hf-base')
    await writeHfCheckpoint(dir, SPEC, { seed: 11 })
    const hf = await loadHfModel(dir)
    const model = withAdapters(
      hf.model,
      initAdapters(hf.config, fullLoraConfig({ rank: 2 }), 3),
      { rank: 2 },
      { base: dir },
    )
    const optimizer = new AdamW(model.params)
    await trainStep(model, optimizer)
    const ckpt = path.join(root, 'ckpt')
    await saveCheckpoint(ckpt, model, { metadata: { version: '1' } })
    assert.ok(!existsSync(path.join(ckpt, 'model.safetensors')), 'no copy of the frozen weights')
    const peft = JSON.parse(await readFile(path.join(ckpt, 'adapter_config.json'), 'utf8'))
    assert.equal(peft.r, 2)
    assert.equal(peft.lora_alpha, 4)
    assert.equal(peft.base_model_name_or_path, path.resolve(dir))
    const read = await readCheckpointWeights(ckpt)
    assert.deepEqual(read.weights, await getWeights(model))
    assert.deepEqual(read.lora, model.lora?.config)
    const loaded = await loadCheckpointModel(ckpt)
    assert.deepEqual(logitsOf(loaded.model), logitsOf(model))
    assert.equal(loaded.metadata.version, '1')

    // export merges the adapters; the exported model's logits equal the adapted model's
    const out = path.join(root, 'exported')
    const res = await exportHf(ckpt, out)
    assert.ok(res.files.includes('config.json') && res.files.includes('model.safetensors'))
    const back = await loadHfModel(out)
    const diff = maxAbsDiff(logitsOf(back.model), logitsOf(model))
    assert.ok(diff < 1e-4, `max |exported - adapted| = ${diff}`)
    optimizer.dispose()
    for (const m of [loaded.model, back.model, model, hf.model]) disposeTransformer(m)
  })

  it('checkpoint - a LoRA model without a base directory or a missing base fails with one line', async () => {
    const model = createTransformer(CONFIG, { lora: { rank: 2 } })
    await assert.rejects(
      saveCheckpoint(path.join(root, 'no-base'), model, {}),
      (err: Error) =>
        err instanceof CheckpointError && /needs the directory of its base weights/.test(err.message),
    )
    assert.ok(!existsSync(path.join(root, 'no-base')))
    disposeTransformer(model)
    const dir = path.join(root, 'gone-base')
    await writeHfCheckpoint(dir, SPEC, { seed: 1 })
    const hf = await loadHfModel(dir)
    const adapted = withAdapters(hf.model, initAdapters(hf.config, fullLoraConfig({}), 0), {}, { base: dir })
    await saveCheckpoint(path.join(root, 'orphan'), adapted, {})
    await rm(dir, { recursive: true })
    await assert.rejects(
      loadCheckpointModel(path.join(root, 'orphan')),
      (err: Error) =>
        err instanceof CheckpointError &&
        err.message.includes('base model directory of the adapters is missing'),
    )
    disposeTransformer(adapted)
    disposeTransformer(hf.model)
  })
})

/** Random base weights of `CONFIG`. */
function randomWeights(seed: number): Record<string, Float32Array> {
  const m = createTransformer(CONFIG, { seed })
  const out = tf.tidy(() =>
    Object.fromEntries([...m.params].map(([n, v]) => [n, (v.dataSync() as Float32Array).slice()])),
  )
  disposeTransformer(m)
  return out
}
