import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  disposeTransformer,
  loadHfModel,
  loadJinjaChatFormat,
  readHfModelConfig,
  writeTinyQwen3,
} from '../../gpu/index.ts'
import { QWEN3_TOKENIZER_DIR } from '../../gpu/testing.ts'
import { useTestBackend } from '../support/test-backend.ts'
import { runTriad } from '../support/triad-process.ts'

/** The files of the tiny checkpoint, in the order `triad model tiny` prints them. */
const FILES = [
  'model.safetensors',
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
]

describe('bin/model tiny', () => {
  let root: string
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'triad-model-tiny-'))
  })
  after(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it('model tiny OUT: writes the tiny Qwen3 checkpoint the HF loader reads, with its exact config, prints each file', async () => {
    const out = path.join(root, 'new', 'tiny-qwen3')
    const r = await runTriad(['model', 'tiny', out])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stderr, '')
    const lines = r.stdout.split('\n')
    assert.equal(
      lines[0],
      `wrote a tiny random Qwen3ForCausalLM checkpoint to ${out} (1 layer, width 16, vocabulary 151936, context 4096, bfloat16, seed 0):`,
    )
    assert.deepEqual(
      lines.slice(1).map((l) => /^ {2}(\S+) \(\d+ bytes\)$/.exec(l)?.[1]),
      FILES,
    )
    assert.deepEqual((await readdir(out)).sort(), [...FILES].sort())

    await useTestBackend()
    const { model, ...hf } = await loadHfModel(out)
    disposeTransformer(model)
    assert.deepEqual(hf, {
      architecture: 'Qwen3ForCausalLM',
      config: {
        layers: 1,
        width: 16,
        heads: 2,
        contextLength: 4096,
        vocabSize: 151_936,
        mlpHidden: 32,
        ropeTheta: 1_000_000,
        normEps: 1e-6,
        kvHeads: 1,
        headDim: 8,
        qkvBias: false,
        qkNorm: true,
        tiedEmbeddings: true,
        ropeScaling: { type: 'none' },
      },
      bosTokenId: 1,
      eosTokenIds: [2],
      torchDtype: 'bfloat16',
      generation: {
        eosTokenIds: [2, 3],
        bosTokenId: 1,
        doSample: true,
        temperature: 0.7,
        top_p: 0.8,
        topK: 20,
      },
    })

    // the same bytes as the tests' writer gives for the same settings, and Qwen3's own tokenizer files
    const direct = path.join(root, 'direct')
    await writeTinyQwen3(direct)
    for (const f of FILES)
      assert.ok((await readFile(path.join(out, f))).equals(await readFile(path.join(direct, f))), f)
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      assert.ok(
        (await readFile(path.join(out, f))).equals(await readFile(path.join(QWEN3_TOKENIZER_DIR, f))),
        f,
      )
    // and the chat template renders a turn in Qwen3's format
    const chat = loadJinjaChatFormat(out)
    assert.match(
      chat.decode(chat.render([{ role: 'user', content: 'hi' }], [])),
      /^<\|im_start\|>user\nhi<\|im_end\|>\n$/,
    )
  })

  it('model tiny --layers --seed --context-length: into an existing empty directory, the config says so', async () => {
    const out = path.join(root, 'empty')
    await mkdir(out)
    const r = await runTriad([
      'model',
      'tiny',
      out,
      '--layers',
      '2',
      '--seed',
      '3',
      '--context-length',
      '1024',
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /\(2 layers, width 16, vocabulary 151936, context 1024, bfloat16, seed 3\):\n/)
    const hf = readHfModelConfig(out)
    assert.equal(hf.config.layers, 2)
    assert.equal(hf.config.contextLength, 1024)
    const seeded = path.join(root, 'seeded')
    await writeTinyQwen3(seeded, { layers: 2, seed: 3, contextLength: 1024 })
    assert.ok(
      (await readFile(path.join(out, 'model.safetensors'))).equals(
        await readFile(path.join(seeded, 'model.safetensors')),
      ),
    )
  })

  it('model tiny into a non-empty directory: one line, exit 1, nothing written', async () => {
    const out = path.join(root, 'full')
    await mkdir(out)
    await writeFile(path.join(out, 'keep.txt'), 'mine')
    const r = await runTriad(['model', 'tiny', out])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `triad: ${out} is not empty (1 entry); give a new or empty directory\n`)
    assert.equal(r.stdout, '')
    assert.deepEqual(await readdir(out), ['keep.txt'])
    assert.equal(await readFile(path.join(out, 'keep.txt'), 'utf8'), 'mine')
  })

  it('model tiny onto a file: one line, exit 1, the file unchanged', async () => {
    const out = path.join(root, 'a-file')
    await writeFile(out, 'mine')
    const r = await runTriad(['model', 'tiny', out])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `triad: ${out} exists and is not a directory\n`)
    assert.equal(await readFile(out, 'utf8'), 'mine')
  })

  it('model tiny without OUT, or with a bad --layers: a usage error, exit 2', async () => {
    const missing = await runTriad(['model', 'tiny'])
    assert.equal(missing.code, 2)
    assert.equal(missing.stderr, "error: missing required argument 'out'\nsee `triad model tiny --help`\n")
    assert.equal(missing.stdout, '')

    const bad = await runTriad(['model', 'tiny', path.join(root, 'never'), '--layers', '0'])
    assert.equal(bad.code, 2)
    assert.equal(
      bad.stderr,
      "error: option '--layers <n>' argument '0' is invalid. Expected an integer >= 1.\nsee `triad model tiny --help`\n",
    )
    await assert.rejects(readdir(path.join(root, 'never')), { code: 'ENOENT' })
  })
})
