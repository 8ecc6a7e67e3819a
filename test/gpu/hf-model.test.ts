import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  CheckpointError,
  ContinuousBatcher,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  exportHf,
  generate,
  learnTaskTokenizer,
  loadHfModel,
  ModelTooLargeError,
  saveCheckpoint,
  UnsupportedArchitectureError,
} from '../../gpu/index.ts'
import { forward, KvCache, readHfModelWeights } from '../../gpu/testing.ts'
import { type TestHfSpec, writeHfCheckpoint } from '../support/hf-checkpoint.ts'
import { referenceLogits } from '../support/hf-reference-forward.ts'
import { useTestBackend } from '../support/test-backend.ts'

const base = {
  hidden_size: 16,
  num_hidden_layers: 2,
  intermediate_size: 24,
  vocab_size: 40,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-6,
}

/** Test models: each architecture, GQA, head_dim != hidden/heads, tied and untied, rope variants. */
const SPECS: Record<string, { spec: TestHfSpec; dtype?: 'BF16' | 'F16' | 'F32'; shards?: number }> = {
  qwen3: {
    spec: {
      ...base,
      architecture: 'Qwen3ForCausalLM',
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 8, // 4 * 8 = 32 != hidden 16, as in Qwen3 (q width above the model width)
      rope_theta: 1000000,
      tie_word_embeddings: true,
      rope_scaling: null,
    },
  },
  qwen2: {
    spec: {
      ...base,
      architecture: 'Qwen2ForCausalLM',
      num_attention_heads: 4,
      num_key_value_heads: 1,
      head_dim: 4,
      rope_theta: 10000,
      tie_word_embeddings: false,
    },
    shards: 3,
  },
  llama3: {
    spec: {
      ...base,
      architecture: 'LlamaForCausalLM',
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 8,
      rope_theta: 500000,
      tie_word_embeddings: false,
      rope_scaling: {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 16, // small, so that all three frequency bands occur
      },
    },
  },
  'llama-linear-f16': {
    spec: {
      ...base,
      architecture: 'LlamaForCausalLM',
      num_attention_heads: 4,
      num_key_value_heads: 4,
      head_dim: 4,
      rope_theta: 10000,
      tie_word_embeddings: true,
      rope_scaling: { type: 'linear', factor: 2 },
    },
    dtype: 'F16',
  },
  'llama-f32': {
    spec: {
      ...base,
      architecture: 'LlamaForCausalLM',
      num_attention_heads: 2,
      num_key_value_heads: 2,
      head_dim: 8,
      rope_theta: 10000,
      tie_word_embeddings: true,
    },
    dtype: 'F32',
  },
}

const IDS = [3, 17, 0, 39, 8, 8, 21, 5, 30, 12, 2]

function maxAbsDiff(a: number[][], b: number[][]): number {
  let m = 0
  for (let i = 0; i < a.length; i++)
    for (let j = 0; j < a[i]!.length; j++) m = Math.max(m, Math.abs(a[i]![j]! - b[i]![j]!))
  return m
}

describe('gpu/hf-model', () => {
  let root: string
  before(async () => {
    await useTestBackend()
    root = await mkdtemp(path.join(tmpdir(), 'triad-hf-'))
  })
  after(async () => {
    await rm(root, { recursive: true, force: true })
  })

  for (const [name, { spec, dtype, shards }] of Object.entries(SPECS)) {
    it(`${name}: logits equal a plain-loop reference forward to 1e-4`, async () => {
      const dir = path.join(root, name)
      const written = await writeHfCheckpoint(dir, spec, { dtype, shards, seed: name.length })
      if (shards) assert.ok(existsSync(path.join(dir, 'model.safetensors.index.json')))
      const loaded = await loadHfModel(dir)
      assert.equal(loaded.architecture, spec.architecture)
      assert.deepEqual(loaded.generation?.eosTokenIds, [2, 3])
      const expected = referenceLogits(spec, written.tensors, IDS)
      const logits = forward(loaded.model, tf.tensor2d([IDS], [1, IDS.length], 'int32'))
      const got = (logits.arraySync() as number[][][])[0]!
      logits.dispose()
      const diff = maxAbsDiff(got, expected)
      assert.ok(diff < 1e-4, `max |logit - reference| = ${diff}`)
      // the reference is not trivially matched: logits spread over several units
      const spread = Math.max(...expected[5]!) - Math.min(...expected[5]!)
      assert.ok(spread > 1, `logit spread ${spread}`)

      // the KV cache path (one token at a time, grouped-query cache) gives the same logits
      const cache = new KvCache(loaded.config.layers, 1)
      const stepwise: number[][] = []
      for (const id of IDS) {
        const step = forward(loaded.model, tf.tensor2d([[id]], [1, 1], 'int32'), { cache, lastOnly: true })
        stepwise.push((step.arraySync() as number[][])[0]!)
        step.dispose()
      }
      cache.dispose()
      assert.ok(maxAbsDiff(stepwise, expected) < 1e-4)
      disposeTransformer(loaded.model)
    })
  }

  it('a grouped-query model serves through the continuous batcher (shared prefixes too) as generate() does', async () => {
    const { model } = await loadHfModel(path.join(root, 'qwen2')) // 4 query heads, 1 key/value head
    const prompts = [
      [3, 17, 0, 39, 8],
      [3, 17, 0, 39, 8, 8, 21],
      [11, 2],
      [3, 17, 0, 39, 8, 30],
    ]
    const options = { maxNewTokens: 6, temperature: 0 }
    const expected = await Promise.all(prompts.map((p) => generate(model, [p], options).then((g) => g[0]!)))
    const batcher = new ContinuousBatcher(model, { maxBatch: 2 })
    const first = await batcher.submit(Int32Array.from(prompts[0]!), options) // fills the prefix cache
    const rest = await Promise.all(prompts.slice(1).map((p) => batcher.submit(Int32Array.from(p), options)))
    for (const [i, got] of [first, ...rest].entries()) {
      assert.deepEqual(Array.from(got.tokens), Array.from(expected[i]!.tokens), `prompt ${i}`)
      for (let k = 0; k < got.logprobs.length; k++)
        assert.ok(Math.abs(got.logprobs[k]! - expected[i]!.logprobs[k]!) < 1e-4)
    }
    await batcher.close()
    disposeTransformer(model)
  })

  it('a triad-exported Hugging Face directory loads back to identical logits (F32)', async () => {
    const src = path.join(root, 'qwen3')
    const out = path.join(root, 'qwen3-export')
    const res = await exportHf(src, out)
    assert.equal(res.architecture, 'Qwen3ForCausalLM')
    const a = await loadHfModel(src)
    const b = await loadHfModel(out)
    const ids = tf.tensor2d([IDS], [1, IDS.length], 'int32')
    const la = forward(a.model, ids).dataSync()
    const lb = forward(b.model, ids).dataSync()
    assert.deepEqual(Array.from(lb), Array.from(la))
    disposeTransformer(a.model)
    disposeTransformer(b.model)
  })

  it('a triad checkpoint exports as a Llama-style directory with its tokenizer and loads back to identical logits', async () => {
    const tokenizer = learnTaskTokenizer(
      ['the cat sat on the mat; the cat ate the rat', 'calc 12 + 30 = 42'],
      12,
    )
    const model = createTransformer(
      { layers: 2, width: 16, heads: 2, contextLength: 32, vocabSize: tokenizer.vocabSize },
      { seed: 7 },
    )
    const ckpt = path.join(root, 'triad-ckpt')
    const out = path.join(root, 'triad-ckpt-hf')
    await saveCheckpoint(ckpt, model, { tokenizer })
    const res = await exportHf(ckpt, out)
    assert.equal(res.architecture, 'LlamaForCausalLM')
    assert.deepEqual(res.files, [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ])
    const config = JSON.parse(await readFile(path.join(out, 'config.json'), 'utf8'))
    assert.deepEqual(config.architectures, ['LlamaForCausalLM'])
    assert.equal(config.model_type, 'llama')
    assert.equal(config.tie_word_embeddings, true)
    assert.equal(config.num_key_value_heads, 2)
    assert.equal(config.head_dim, 8)
    assert.equal(config.intermediate_size, model.config.mlpHidden)
    assert.equal(config.rms_norm_eps, 1e-5)
    assert.deepEqual(config.eos_token_id, [tokenizer.imEndId, tokenizer.eosId])
    const tokJson = JSON.parse(await readFile(path.join(out, 'tokenizer.json'), 'utf8'))
    assert.equal(Object.keys(tokJson.model.vocab).length + tokJson.added_tokens.length, tokenizer.vocabSize)
    assert.equal(tokJson.model.merges.length, tokenizer.mergeCount)
    assert.equal(tokJson.added_tokens[3].content, '<|im_end|>')
    assert.equal(tokJson.added_tokens[3].id, tokenizer.imEndId)
    const gen = JSON.parse(await readFile(path.join(out, 'generation_config.json'), 'utf8'))
    assert.deepEqual(gen.eos_token_id, [tokenizer.imEndId, tokenizer.eosId])

    const back = await loadHfModel(out)
    assert.deepEqual(back.config, model.config)
    const ids = tf.tensor2d([[1, 2, 3, 260, 40, 41, 42, tokenizer.vocabSize - 1]], [1, 8], 'int32')
    assert.deepEqual(
      Array.from(forward(back.model, ids).dataSync()),
      Array.from(forward(model, ids).dataSync()),
    )
    disposeTransformer(back.model)

    // a BF16 export is a real BF16 file (half the bytes) that loads with rounded weights
    const bf16 = path.join(root, 'triad-ckpt-hf-bf16')
    await exportHf(ckpt, bf16, { dtype: 'BF16' })
    const header = (await readFile(path.join(bf16, 'model.safetensors'))).toString('utf8', 0, 400)
    assert.match(header, /"dtype":"BF16"/)
    const rounded = await loadHfModel(bf16)
    const a = forward(model, ids).dataSync()
    const b = forward(rounded.model, ids).dataSync()
    let diff = 0
    for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!))
    assert.ok(diff > 0 && diff < 1e-2, `bf16 logit difference ${diff}`)
    disposeTransformer(rounded.model)
    disposeTransformer(model)
    // an existing output directory is refused (nothing overwritten)
    await assert.rejects(exportHf(ckpt, out), /already exists/)
  })

  describe('bad input: one clear line, nothing loaded', () => {
    const spec = SPECS.qwen2!.spec
    async function fresh(name: string, shards = 1) {
      const dir = path.join(root, `bad-${name}`)
      await writeHfCheckpoint(dir, spec, { shards })
      return dir
    }
    async function editConfig(dir: string, edit: (c: Record<string, unknown>) => void) {
      const file = path.join(dir, 'config.json')
      const c = JSON.parse(await readFile(file, 'utf8'))
      edit(c)
      await writeFile(file, JSON.stringify(c))
    }
    const oneLine = (err: unknown) => {
      assert.ok(err instanceof Error)
      assert.ok(!err.message.includes('\n'), err.message)
      return true
    }

    it('an unsupported architecture is named, with the supported ones', async () => {
      const dir = await fresh('arch')
      await editConfig(dir, (c) => {
        c.architectures = ['MistralForCausalLM']
      })
      await assert.rejects(readHfModelWeights(dir), (err: unknown) => {
        oneLine(err)
        assert.ok(err instanceof UnsupportedArchitectureError)
        assert.equal(
          err.message,
          `${path.join(dir, 'config.json')}: architecture 'MistralForCausalLM' is not supported; supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM`,
        )
        return true
      })
    })

    it('a missing shard is named', async () => {
      const dir = await fresh('shard', 3)
      await unlink(path.join(dir, 'model-00002-of-00003.safetensors'))
      await assert.rejects(readHfModelWeights(dir), (err: unknown) => {
        oneLine(err)
        assert.equal(
          (err as Error).message,
          `${path.join(dir, 'model-00002-of-00003.safetensors')}: shard listed in model.safetensors.index.json is missing`,
        )
        return true
      })
    })

    it('a tensor with the wrong shape is named, with the expected and found shapes', async () => {
      const dir = await fresh('shape')
      await editConfig(dir, (c) => {
        c.intermediate_size = 32 // the stored MLP is 24 wide
      })
      await assert.rejects(readHfModelWeights(dir), (err: unknown) => {
        oneLine(err)
        assert.ok(err instanceof CheckpointError)
        assert.equal(
          err.message,
          `${path.join(dir, 'model.safetensors')}: tensor model.layers.0.mlp.gate_proj.weight has shape [24, 16], expected [32, 16]`,
        )
        return true
      })
    })

    it('a dtype it cannot read is named', async () => {
      const dir = await fresh('dtype')
      const file = path.join(dir, 'model.safetensors')
      const bytes = await readFile(file)
      const at = bytes.indexOf('"dtype":"BF16"')
      assert.ok(at > 0)
      bytes.write('"dtype":"I16" ', at) // same length: the header stays well-formed JSON
      await writeFile(file, bytes)
      await assert.rejects(readHfModelWeights(dir), (err: unknown) => {
        oneLine(err)
        assert.match((err as Error).message, /: tensor \S+: unsupported dtype I16 \(F32, F16, BF16\)$/)
        return true
      })
    })

    it('a model too large for the wasm heap fails before any weight is read, naming its size and the limit', async (t) => {
      // about wasm's 4 GiB heap: on the other backends the limit is the machine's memory
      await chooseBackend({ backend: 'wasm', log: () => {} })
      t.after(useTestBackend)
      const dir = path.join(root, 'bad-large')
      await writeHfCheckpoint(dir, spec)
      await editConfig(dir, (c) => {
        // Qwen2.5-7B's shape; the directory has no such weights, and none are read
        Object.assign(c, {
          hidden_size: 3584,
          num_hidden_layers: 28,
          num_attention_heads: 28,
          num_key_value_heads: 4,
          head_dim: 128,
          intermediate_size: 18944,
          vocab_size: 152064,
        })
      })
      await assert.rejects(readHfModelWeights(dir), (err: unknown) => {
        oneLine(err)
        assert.ok(err instanceof ModelTooLargeError)
        assert.equal(err.limitBytes, 2 ** 32)
        assert.equal(err.backend, 'wasm')
        // 7,615,616,512 parameters (untied) as float32, plus the head's transpose
        assert.equal(err.bytes, 4 * 7615616512 + 4 * 152064 * 3584)
        assert.match(err.message, /needs 30\.40 GiB as float32 .* the wasm backend's limit of 4\.00 GiB/)
        return true
      })
    })

    it('an export from bad input writes nothing', async () => {
      const dir = await fresh('export')
      await editConfig(dir, (c) => {
        c.intermediate_size = 32
      })
      const out = path.join(root, 'bad-export-out')
      await assert.rejects(exportHf(dir, out), CheckpointError)
      assert.equal(existsSync(out), false)
      assert.equal(existsSync(`${out}.tmp-${process.pid}`), false)
    })
  })
})
