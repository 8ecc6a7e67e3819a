import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  AdamW,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  generate,
  type RlBatch,
  rlStep,
  type SftBatch,
  sftStep,
} from '../../gpu/index.ts'

/**
 * The native engine computes the numbers the wasm backend computes: on the quickstart's toy model
 * (2 layers, width 128, 4 heads, vocabulary 264), 3 SFT steps and 3 GRPO-TCR steps from one seed
 * give the same losses and gradient norms to 1e-5 (relative), and greedy generation the same ids with logprobs within 1e-4.
 */

const MODEL = { layers: 2, width: 128, heads: 4, contextLength: 64, vocabSize: 264 }
const BATCH = 8
const SEQ = 32

function sftBatch(): SftBatch {
  const n = BATCH * SEQ
  const inputs = Int32Array.from({ length: n }, (_, k) => (k * 7919 + 13) % MODEL.vocabSize)
  const targets = Int32Array.from({ length: n }, (_, k) => (k * 104729 + 5) % MODEL.vocabSize)
  const mask = Float32Array.from({ length: n }, (_, k) => (k % SEQ >= 6 ? 1 : 0))
  return {
    batch: BATCH,
    seqLen: SEQ,
    inputs,
    targets,
    mask,
    lossTokens: mask.reduce((s, v) => s + v, 0),
    examples: [],
  }
}

function rlBatch(): RlBatch {
  const n = BATCH * SEQ
  const tokens = Int32Array.from({ length: n }, (_, k) => (k * 7919 + 13) % MODEL.vocabSize)
  const lossMask = Float32Array.from({ length: n }, (_, k) => (k % SEQ >= 6 ? 1 : 0))
  return {
    batch: BATCH,
    seqLen: SEQ,
    tokens,
    lossMask,
    behaviorLogprobs: Float32Array.from(lossMask, (m, k) => (m ? -5.5 + 0.01 * (k % 7) : 0)),
    weightVersions: new Int32Array(n),
    tasks: Array.from({ length: BATCH }, (_, i) => (i < BATCH / 2 ? 'calc' : 'maze')),
    groupIds: Array.from({ length: BATCH }, (_, i) => `g${Math.floor(i / 4)}`),
    rewards: Float32Array.from({ length: BATCH }, (_, i) => (i * 3) % 2),
  }
}

interface Trace {
  sft: { loss: number; gradNorm: number }[]
  rl: { loss: number; gradNorm: number }[]
  ids: number[]
  logprobs: number[]
}

async function trace(backend: string): Promise<Trace> {
  await chooseBackend({ backend, log: () => {} })
  const model = createTransformer(MODEL, { seed: 7 })
  const optimizer = new AdamW(model.params)
  const out: Trace = { sft: [], rl: [], ids: [], logprobs: [] }
  try {
    const sft = sftBatch()
    for (let s = 0; s < 3; s++) {
      const r = await sftStep(model, optimizer, sft, 1e-3)
      out.sft.push({ loss: r.loss, gradNorm: r.gradNorm })
    }
    const rl = rlBatch()
    for (let s = 0; s < 3; s++) {
      const m = await rlStep({ model, optimizer, lr: 1e-3, version: s }, rl)
      out.rl.push({ loss: m['loss/total']!, gradNorm: m['optim/grad_norm']! })
    }
    const [gen] = await generate(model, [[1, 2, 3, 4]], { maxNewTokens: 8, temperature: 0 })
    out.ids = Array.from(gen!.tokens)
    out.logprobs = Array.from(gen!.logprobs)
  } finally {
    optimizer.dispose()
    disposeTransformer(model)
  }
  return out
}

const close = (a: number, b: number, tol: number) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(a))

describe('gpu/native numerics', () => {
  it('native numerics - 3 SFT and 3 GRPO-TCR steps match wasm: losses and gradient norms to 1e-5', async () => {
    const wasm = await trace('wasm')
    const native = await trace('native')
    for (const part of ['sft', 'rl'] as const)
      wasm[part].forEach((w, i) => {
        const n = native[part][i]!
        assert.ok(close(w.loss, n.loss, 1e-5), `${part} step ${i + 1} loss: wasm ${w.loss}, native ${n.loss}`)
        assert.ok(
          close(w.gradNorm, n.gradNorm, 1e-5),
          `${part} step ${i + 1} gradient norm: wasm ${w.gradNorm}, native ${n.gradNorm}`,
        )
      })
    assert.ok(wasm.sft[2]!.loss < wasm.sft[0]!.loss, 'SFT lowers the loss (the steps did something)')
    assert.equal(wasm.ids.length, 8)
    assert.deepEqual(native.ids, wasm.ids)
    for (const [i, w] of wasm.logprobs.entries())
      assert.ok(Math.abs(w - native.logprobs[i]!) <= 1e-4, `logprob ${i}: ${w} vs ${native.logprobs[i]}`)
  })
})
