import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { loraUpdate } from '../../gpu/lora-update.ts'
import { tapeGradients } from '../../gpu/tape-gradients.ts'
import { useTestBackend } from '../support/test-backend.ts'

const N = 6
const IN = 5
const R = 2
const OUT = 7
const SCALE = 4 // alpha 8 / rank 2

/** Seeded variables of the shapes of one projection with an adapter. */
function operands(seed: number) {
  const v = (shape: [number, number], s: number) =>
    tf.variable(tf.randomNormal(shape, 0, 1, 'float32', seed + s)) as tf.Variable<tf.Rank.R2>
  return { w: v([IN, OUT], 1), x: v([N, IN], 2), a: v([IN, R], 3), b: v([R, OUT], 4) }
}

/** A loss that weights every output element differently, so each gradient entry is distinct. */
const weights = () =>
  tf
    .range(1, N * OUT + 1)
    .reshape([N, OUT])
    .div(N * OUT)

describe('loraUpdate (y + s (x A) B with a small backward)', () => {
  before(async () => {
    await useTestBackend()
  })

  it('gives the value and the gradients of the same update composed from tfjs ops', () => {
    const { w, x, a, b } = operands(10)
    const vars = [w, x, a, b]
    const c = weights()
    const fused = () =>
      tf.sum(tf.mul(loraUpdate(tf.matMul(x, w) as tf.Tensor2D, x, a, b, SCALE), c)) as tf.Scalar
    const composed = () =>
      tf.sum(tf.mul(tf.add(tf.matMul(x, w), tf.mul(tf.matMul(tf.matMul(x, a), b), SCALE)), c)) as tf.Scalar
    const f = tapeGradients(fused, vars)
    const g = tf.variableGrads(composed, vars)
    assert.ok(
      Math.abs(f.value.dataSync()[0]! - g.value.dataSync()[0]!) <= 1e-5 * Math.abs(g.value.dataSync()[0]!),
    )
    for (const v of vars) {
      const got = f.grads[v.name]!.dataSync()
      const want = g.grads[v.name]!.dataSync()
      assert.equal(got.length, want.length)
      for (let i = 0; i < got.length; i++)
        assert.ok(
          Math.abs(got[i]! - want[i]!) <= 1e-5 * (1 + Math.abs(want[i]!)),
          `${v.name}[${i}]: ${got[i]} vs ${want[i]}`,
        )
    }
    tf.dispose([f.value, f.grads, g.value, g.grads, c, ...vars])
  })

  it('keeps x, x A and the adapters for the backward pass, not the [n, out] products', async () => {
    const { w, x, a, b } = operands(20)
    const y = tf.matMul(x, w) as tf.Tensor2D
    const engine = tf.engine() as unknown as { state: { activeTape: { saved?: tf.Tensor[] }[] } }
    let savedShapes: number[][] = []
    const { value, grads } = tapeGradients(() => {
      const from = engine.state.activeTape.length
      const updated = loraUpdate(y, x, a, b, SCALE)
      savedShapes = engine.state.activeTape.slice(from).flatMap((n) => (n.saved ?? []).map((t) => t.shape))
      return tf.sum(updated) as tf.Scalar
    }, [a, b])
    assert.deepEqual(savedShapes, [
      [N, IN],
      [N, R],
      [IN, R],
      [R, OUT],
    ])
    tf.dispose([value, grads, y, w, x, a, b])
  })
})
