import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  connectNats,
  getTask,
  startActorSystem,
  startEnvController,
  startEnvWorker,
  tasks,
} from '../../actors/index.ts'
import { formatEnvWorkers, tryDifficulty } from '../../bin/commands/env.ts'
import { CliError } from '../../bin/errors.ts'
import {
  disposeTransformer,
  fullLoraConfig,
  initAdapters,
  loadHfModel,
  saveCheckpoint,
  withAdapters,
} from '../../gpu/index.ts'
import { suiteNatsServer } from '../support/suite-nats-server.ts'
import { useTestBackend } from '../support/test-backend.ts'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin/env', () => {
  it("tryDifficulty - a level outside the task's levels names the option, the value and the levels", () => {
    const calc = getTask('calc')
    assert.equal(tryDifficulty(calc, undefined), undefined)
    assert.equal(tryDifficulty(calc, 7), 7)
    for (const level of [0, 8])
      assert.throws(
        () => tryDifficulty(calc, level),
        (err: Error) =>
          err instanceof CliError &&
          err.message ===
            `option '--difficulty <d>' argument '${level}' is invalid: task 'calc' has levels 1..7`,
      )
  })

  it('env try - a too-high difficulty is reported once, on one line', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--difficulty', '99'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      "triad: option '--difficulty <d>' argument '99' is invalid: task 'calc' has levels 1..7\n",
    )
    assert.equal(r.stdout, '')
  })

  it('env try - a level within the range plays the episode at that level', async () => {
    const r = await runTriad([
      'env',
      'try',
      'calc',
      '--difficulty',
      '3',
      '--seed',
      '4',
      '--error-rate',
      '0',
      '--json',
    ])
    assert.equal(r.code, 0, r.stderr)
    const t = JSON.parse(r.stdout) as { task: string; difficulty: number }
    assert.equal(t.task, 'calc')
    assert.equal(t.difficulty, 3)
  })

  it('env try - model:DIR plays an episode with a Hugging Face model, and with LoRA adapters on it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'triad-env-try-'))
    try {
      const hf = join(root, 'qwen3-tiny')
      await writeTinyQwen3(hf)
      const args = ['--max-new-tokens', '6', '--context-length', '1024', '--json']
      const r = await runTriad(['env', 'try', 'calc', '--policy', `model:${hf}`, ...args])
      assert.equal(r.code, 0, r.stderr)
      const t = JSON.parse(r.stdout) as { task: string; messages: { role: string }[]; status: string }
      assert.equal(t.task, 'calc')
      assert.ok(t.messages.some((m) => m.role === 'assistant'))
      // the same with adapters: a checkpoint of them names its base
      await useTestBackend()
      const base = await loadHfModel(hf, { contextLength: 1024 })
      const adapted = withAdapters(
        base.model,
        initAdapters(base.config, fullLoraConfig({ rank: 2 }), 1),
        { rank: 2 },
        { base: hf },
      )
      const ckpt = join(root, 'adapters')
      await saveCheckpoint(ckpt, adapted, {})
      disposeTransformer(adapted)
      disposeTransformer(base.model)
      const l = await runTriad(['env', 'try', 'calc', '--policy', `model:${ckpt}`, ...args])
      assert.equal(l.code, 0, l.stderr)
      // zero B: the base model's own episode
      assert.deepEqual(JSON.parse(l.stdout).messages, t.messages)
      const bad = await runTriad(['env', 'try', 'calc', '--policy', `model:${join(root, 'none')}`])
      assert.equal(bad.code, 2)
      assert.match(
        bad.stderr,
        /^triad: .*none is neither a model directory \(no config.json\) nor a run directory/,
      )
      assert.equal(bad.stderr.trim().split('\n').length, 1)
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  it('env try - model:DIR whose tokenizer has no chat template, or too large for the wasm heap: one line, exit 1', async () => {
    const root = await mkdtemp(join(tmpdir(), 'triad-env-try-bad-'))
    try {
      const noTemplate = join(root, 'no-template')
      await writeTinyQwen3(noTemplate)
      const cfgFile = join(noTemplate, 'tokenizer_config.json')
      const { chat_template: _, ...cfg } = JSON.parse(await readFile(cfgFile, 'utf8'))
      await writeFile(cfgFile, JSON.stringify(cfg))
      const a = await runTriad(['env', 'try', 'calc', '--policy', `model:${noTemplate}`, '--backend', 'wasm'])
      // the backend line, then the error in one line
      assert.equal(a.code, 1)
      assert.deepEqual(a.stderr.trim().split('\n').slice(0, 1), ['triad: tensor backend wasm (forced)'])
      assert.equal(a.stderr.trim().split('\n').length, 2, a.stderr)
      assert.match(
        a.stderr.trim().split('\n')[1]!,
        /^triad: cannot load model: .*tokenizer_config\.json: has no chat_template/,
      )
      const large = join(root, 'large')
      await writeTinyQwen3(large)
      const file = join(large, 'config.json')
      // Qwen3-8B's shape; the directory has no such weights, and none are read
      const c = JSON.parse(await readFile(file, 'utf8'))
      Object.assign(c, {
        hidden_size: 4096,
        num_hidden_layers: 36,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        head_dim: 128,
        intermediate_size: 12288,
        tie_word_embeddings: false,
      })
      await writeFile(file, JSON.stringify(c))
      const b = await runTriad(['env', 'try', 'calc', '--policy', `model:${large}`, '--backend', 'wasm'])
      assert.equal(b.code, 1)
      assert.equal(b.stderr.trim().split('\n').length, 2, b.stderr)
      assert.match(
        b.stderr.trim().split('\n')[1]!,
        /^triad: cannot load model: .*needs [\d.]+ GiB as float32 .* the wasm backend's limit of 4\.00 GiB/,
      )
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  it('env try - a task file that does not exist is reported on one line, naming it', async () => {
    const r = await runTriad(['env', 'try', 'mytasks/missing.ts'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, 'triad: cannot load task file mytasks/missing.ts: no such file\n')
    assert.equal(r.stdout, '')
  })

  it('env try - a split other than train or eval is refused', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--split', 'test'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, "triad: option '--split <split>' argument 'test' is invalid: use train or eval\n")
  })
})

describe('bin/env list', () => {
  const nats = suiteNatsServer('triad-envlist-js-')

  it("triad env list - a table of the controller's workers; --json its answer for scripts", async () => {
    const run = `envlist${process.pid}`
    const t = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const system = startActorSystem({ name: 'envlist' })
    const controller = await startEnvController(system, t, { run, tasks, checkMs: 50 })
    const worker = await startEnvWorker(system, t, { run, id: 'w1', tasks, capacity: 4, heartbeatMs: 100 })
    try {
      let json: { workers: { worker: string; state: string; capacity: number; tasks: string[] }[] } = {
        workers: [],
      }
      // The worker registers with its first heartbeat.
      const deadline = Date.now() + 15_000
      while (json.workers.length === 0 && Date.now() < deadline) {
        const r = await runTriad(['env', 'list', '--nats', nats.url, '--run', run, '--json'])
        assert.equal(r.code, 0, r.stderr)
        json = JSON.parse(r.stdout)
      }
      assert.deepEqual(
        json.workers.map((w) => [w.worker, w.state, w.capacity]),
        [['w1', 'live', 4]],
      )
      const table = await runTriad(['env', 'list', '--nats', nats.url, '--run', run])
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /│ worker +│ state +│ active +│ capacity +│ last seen +│ tasks +│/)
      assert.match(
        table.stdout,
        new RegExp(`│ w1 +│ live +│ 0 +│ 4 +│ \\d+\\.\\d s +│ ${Object.keys(tasks).join(',')} +│`),
      )
      assert.match(table.stdout, /^counts: .*\bstarted 0\b/m)
    } finally {
      await worker.stop()
      await controller.stop()
      await system.stop()
      await t.close()
    }
  })

  it('formatEnvWorkers - no workers says so; the counts sorted on one line', () => {
    assert.equal(
      formatEnvWorkers({ workers: [], counts: { started: 2, refused: 1 } }),
      'no env workers registered with the controller\ncounts: refused 1, started 2\n',
    )
  })
})
