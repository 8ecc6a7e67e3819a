import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { GradientAccumulator, type RlOptimizer } from '../../gpu/micro-batch.ts'
import { createTransformer, disposeTransformer, forward } from '../../gpu/transformer.ts'
import { useTestBackend } from '../support/test-backend.ts'

const tiny = { layers: 1, width: 16, heads: 2, contextLength: 8, vocabSize: 12, mlpHidden: 32 }

/** An optimizer that records the gradients it is given (copied to plain arrays) and changes nothing. */
function recording() {
  const steps: { grads: Record<string, Float32Array>; lr: number; gradNorm?: number }[] = []
  const optimizer: RlOptimizer = {
    step: async (grads, lr, gradNorm) => {
      const copy: Record<string, Float32Array> = {}
      for (const [k, g] of Object.entries(grads)) copy[k] = (await g.data()) as Float32Array
      steps.push({ grads: copy, lr, gradNorm })
      return { gradNorm: 0, clipScale: 1 }
    },
  }
  return { optimizer, steps }
}

/** Mean of the logits of `rows` token rows: a scalar loss with a gradient on every parameter it touches. */
const meanLogit = (model: ReturnType<typeof createTransformer>, rows: number[][]) =>
  forward(model, tf.tensor2d(rows, [rows.length, rows[0]!.length], 'int32')).mean() as tf.Scalar

describe('gpu/micro-batch', () => {
  before(async () => {
    await useTestBackend()
  })

  it('micro-batch - two halves weighted 1/2 give the gradient, loss and metrics of the whole batch', async () => {
    const model = createTransformer(tiny, { seed: 4 })
    const rows = [
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]
    const whole = new GradientAccumulator<'m' | 'n'>(model)
    await whole.add(1, (keep) => {
      const loss = meanLogit(model, rows)
      keep('m', loss)
      keep('n', 3) // a value already read counts like a tensor
      return loss
    })
    const halves = new GradientAccumulator<'m' | 'n'>(model)
    for (const r of rows)
      await halves.add(0.5, (keep) => {
        const loss = meanLogit(model, [r])
        keep('m', loss)
        keep('n', r[0]!) // 1 and 5, weighted 1/2 each
        return loss
      })
    const a = recording()
    const b = recording()
    const wa = await whole.apply(a.optimizer, 0.1)
    const wb = await halves.apply(b.optimizer, 0.1)
    assert.equal(wa.skipped, false)
    assert.ok(wa.gradNorm > 0 && Number.isFinite(wa.gradNorm))
    assert.ok(Math.abs(wa.gradNorm - wb.gradNorm) < 1e-5, `${wa.gradNorm} vs ${wb.gradNorm}`)
    // the optimizer is handed the norm the accumulator computed, not left to compute it again
    assert.equal(a.steps[0]!.gradNorm, wa.gradNorm)
    assert.equal(whole.metrics().get('n'), 3)
    assert.equal(halves.metrics().get('n'), 3)
    assert.ok(Math.abs(whole.loss - halves.loss) < 1e-6)
    assert.ok(Math.abs(whole.metrics().get('m')! - halves.metrics().get('m')!) < 1e-6)
    assert.deepEqual(Object.keys(b.steps[0]!.grads).sort(), Object.keys(a.steps[0]!.grads).sort())
    for (const [k, g] of Object.entries(a.steps[0]!.grads)) {
      const h = b.steps[0]!.grads[k]!
      for (let i = 0; i < g.length; i++) assert.ok(Math.abs(g[i]! - h[i]!) < 1e-5, `${k}[${i}]`)
    }
    assert.equal(a.steps[0]!.lr, 0.1)
    whole.dispose()
    halves.dispose()
    disposeTransformer(model)
  })

  it('micro-batch - no micro-batch: no step, norm 0; a non-finite norm: no step', async () => {
    const model = createTransformer(tiny, { seed: 5 })
    const none = recording()
    assert.deepEqual(await new GradientAccumulator(model).apply(none.optimizer, 0.1), {
      gradNorm: 0,
      skipped: true,
    })
    assert.equal(none.steps.length, 0)
    const bad = new GradientAccumulator(model)
    await bad.add(1, () => meanLogit(model, [[1, 2]]).mul(Number.POSITIVE_INFINITY) as tf.Scalar)
    const inf = recording()
    const r = await bad.apply(inf.optimizer, 0.1)
    assert.equal(r.skipped, true)
    assert.equal(Number.isFinite(r.gradNorm), false)
    assert.equal(inf.steps.length, 0)
    bad.dispose()
    disposeTransformer(model)
  })
})
