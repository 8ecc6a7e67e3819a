import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  ConfigError,
  createTransformer,
  disposeTransformer,
  getWeights,
  makeBatches,
  type RenderedChat,
  renderChat,
  type SftLogRecord,
  SftWorkers,
  sftLoss,
  sftStep,
  sftStepCount,
  Tokenizer,
  tokenLogprobs,
  trainSft,
  warmupCosine,
} from '../../gpu/index.ts'
import { SftWorkerError } from '../../gpu/testing.ts'
import { testBackendName, useTestBackend } from '../support/test-backend.ts'

const ex = (ids: number[], mask: number[]): RenderedChat => ({
  ids: Int32Array.from(ids),
  lossMask: Uint8Array.from(mask),
})

describe('gpu/sft', () => {
  before(async () => {
    await useTestBackend()
  })

  it('sft - length bucketing packs sorted lengths, shifts targets and mask, pads right', () => {
    const examples = [
      ex([1, 2, 3, 4, 5], [0, 0, 1, 1, 1]), // len 5
      ex([6, 7], [0, 1]), // len 2
      ex([8, 9, 10], [0, 0, 0]), // no loss tokens: dropped
      ex([11, 12, 13], [0, 1, 1]), // len 3
      ex([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 0, 1, 1, 1]), // cut to contextLength + 1 = 7
    ]
    const batches = makeBatches(examples, { batchTokens: 8, contextLength: 6, padId: 0 })
    assert.deepEqual(
      batches.map((b) => [b.examples, b.batch, b.seqLen]),
      [
        [[1, 3], 2, 2],
        [[0], 1, 4],
        [[4], 1, 6],
      ],
    )
    const first = batches[0]!
    assert.deepEqual([...first.inputs], [6, 0, 11, 12])
    assert.deepEqual([...first.targets], [7, 0, 12, 13])
    assert.deepEqual([...first.mask], [1, 0, 1, 1])
    assert.equal(first.lossTokens, 3)
    assert.deepEqual([...batches[2]!.mask], [0, 0, 0, 0, 1, 0]) // the rest lay beyond the cut
    const cutAway = makeBatches([ex([1, 2, 3, 4], [0, 0, 0, 1])], {
      batchTokens: 8,
      contextLength: 2,
      padId: 0,
    })
    assert.equal(cutAway.length, 0)
    assert.throws(() => makeBatches(examples, { batchTokens: 4, contextLength: 6, padId: 0 }), ConfigError)
    const capped = makeBatches(examples, { batchTokens: 64, contextLength: 6, padId: 0, maxBatchSize: 2 })
    assert.ok(capped.every((b) => b.batch <= 2))
  })

  it('sft - the loss is the masked token mean of -log p', async () => {
    const model = createTransformer(
      { layers: 1, width: 8, heads: 2, contextLength: 8, vocabSize: 16 },
      { seed: 3 },
    )
    const examples = [ex([1, 2, 3, 4], [0, 1, 0, 1]), ex([5, 6, 7], [0, 1, 1])]
    const [batch] = makeBatches(examples, { batchTokens: 64, contextLength: 8, padId: 0 })
    const loss = (await sftLoss(model, batch!).data())[0]!
    const terms: number[] = []
    for (const e of examples) {
      const ids = [...e.ids]
      const lp = tokenLogprobs(
        model,
        tf.tensor2d([ids.slice(0, -1)], [1, ids.length - 1], 'int32'),
        tf.tensor2d([ids.slice(1)], [1, ids.length - 1], 'int32'),
      ).dataSync()
      for (let t = 1; t < ids.length; t++) if (e.lossMask[t]) terms.push(-lp[t - 1]!)
    }
    assert.equal(terms.length, 4)
    assert.ok(Math.abs(loss - terms.reduce((a, b) => a + b) / 4) < 1e-5)
    disposeTransformer(model)
  })

  it('sft - training on chat trajectories lowers the loss and logs every step', async () => {
    const tok = new Tokenizer()
    const chats = [
      ['2+2', '4'],
      ['3+4', '7'],
      ['5+1', '6'],
      ['1+1', '2'],
    ].map(([q, a]) => {
      return renderChat(tok, [
        { role: 'user', content: q! },
        { role: 'assistant', content: a! },
      ])
    })
    const model = createTransformer(
      { layers: 1, width: 32, heads: 2, contextLength: 32, vocabSize: tok.vocabSize },
      { seed: 1 },
    )
    const opt = new AdamW(model.params, { weightDecay: 0 })
    const logged: SftLogRecord[] = []
    const totals = new Set<number>()
    let clock = 0
    const records = await trainSft(model, opt, chats, {
      epochs: 40,
      batchTokens: 256,
      schedule: warmupCosine({ peakLr: 2e-2, warmupSteps: 5, totalSteps: 40 }),
      onLog: (r, total) => {
        logged.push(r)
        totals.add(total)
      },
      now: () => (clock += 10),
    })
    assert.equal(records.length, 40)
    assert.deepEqual(logged, records)
    // progress goes out through onLog: every record comes with the step total
    assert.deepEqual([...totals], [40])
    assert.deepEqual(
      records.slice(0, 3).map((r) => [r.step, r.epoch, r.ms, r.tokens, r.lossTokens]),
      [
        [1, 0, 10, 4 * 24, 8],
        [2, 1, 10, 4 * 24, 8],
        [3, 2, 10, 4 * 24, 8],
      ],
    )
    assert.ok(records[0]!.loss > 4, `initial loss ${records[0]!.loss}`)
    assert.ok(records[39]!.loss < 1, `final loss ${records[39]!.loss}`)
    assert.equal(JSON.parse(JSON.stringify(records[5])).step, 6)
    opt.dispose()
    disposeTransformer(model)
  })

  it('sft - a full step (loss, gradients, AdamW) leaks no tensors', async () => {
    const model = createTransformer(
      { layers: 1, width: 8, heads: 2, contextLength: 8, vocabSize: 16 },
      { seed: 3 },
    )
    const opt = new AdamW(model.params)
    const [batch] = makeBatches([ex([1, 2, 3, 4], [0, 1, 1, 1])], {
      batchTokens: 64,
      contextLength: 8,
      padId: 0,
    })
    await sftStep(model, opt, batch!, 1e-3)
    const before = tf.memory()
    const record = await sftStep(model, opt, batch!, 1e-3)
    assert.equal(record.step, 2)
    assert.equal(tf.memory().numTensors, before.numTensors)
    assert.equal(tf.memory().numBytes, before.numBytes)
    opt.dispose()
    disposeTransformer(model)
  })

  it('sft - a data-parallel step over a worker thread equals one step on the batches joined', async () => {
    const config = { layers: 1, width: 16, heads: 2, contextLength: 8, vocabSize: 16 }
    const a = ex([1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 1, 1]) // 4 loss tokens
    const b = ex([7, 8, 9], [0, 1, 1]) // 2 loss tokens, shorter: padded in the joined batch
    const joined = makeBatches([a, b], { batchTokens: 64, contextLength: 8, padId: 0 })
    assert.equal(joined.length, 1)
    const [one] = makeBatches([a], { batchTokens: 64, contextLength: 8, padId: 0 })
    const [two] = makeBatches([b], { batchTokens: 64, contextLength: 8, padId: 0 })
    const reference = createTransformer(config, { seed: 5 })
    const parallel = createTransformer(config, { seed: 5 })
    const refOpt = new AdamW(reference.params)
    const parOpt = new AdamW(parallel.params)
    const workers = await SftWorkers.start(1, parallel.config, await testBackendName())
    try {
      for (let i = 0; i < 2; i++) {
        const r = await sftStep(reference, refOpt, joined[0]!, 1e-2)
        const p = await sftStep(parallel, parOpt, [one!, two!], 1e-2, undefined, workers)
        assert.ok(Math.abs(r.loss - p.loss) < 1e-5, `loss ${r.loss} vs ${p.loss}`)
        assert.ok(Math.abs(r.gradNorm - p.gradNorm) < 1e-5, `grad norm ${r.gradNorm} vs ${p.gradNorm}`)
        assert.equal(p.lossTokens, 6)
        assert.equal(p.tokens, 5 + 2)
      }
      const rw = await getWeights(reference)
      const pw = await getWeights(parallel)
      for (const [name, values] of Object.entries(rw)) {
        let worst = 0
        values.forEach((v, j) => {
          worst = Math.max(worst, Math.abs(v - pw[name]![j]!))
        })
        assert.ok(worst < 1e-5, `${name}: largest difference ${worst}`)
      }
      // Each step takes one batch per thread: 2 threads halve the steps of an epoch (rounded up).
      const three = [a, b, ex([1, 3], [0, 1])]
      const settings = { batchTokens: 8, contextLength: 8, maxBatchSize: 1, epochs: 2 }
      assert.equal(sftStepCount(three, parallel, settings), 6)
      assert.equal(sftStepCount(three, parallel, { ...settings, workers }), 4)
      // More batches than threads is refused before any work.
      await assert.rejects(
        sftStep(parallel, parOpt, [one!, two!, one!], 1e-2, undefined, workers),
        (err: unknown) => err instanceof ConfigError && /must be 1 to 2/.test(err.message),
      )
      // A batch the worker cannot compute (ids outside the vocabulary) fails the step with its error.
      const bad = { ...two!, inputs: Int32Array.from([99, 99]) }
      await assert.rejects(
        sftStep(parallel, parOpt, [one!, bad], 1e-2, undefined, workers),
        (err: unknown) => err instanceof SftWorkerError,
      )
    } finally {
      await workers.close()
      refOpt.dispose()
      parOpt.dispose()
      disposeTransformer(reference)
      disposeTransformer(parallel)
    }
  })
})
