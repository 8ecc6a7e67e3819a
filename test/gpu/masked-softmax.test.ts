import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { maskedSoftmax } from '../../gpu/masked-softmax.ts'
import { tapeGradients } from '../../gpu/tape-gradients.ts'
import { useTestBackend } from '../support/test-backend.ts'

// 2 sequences, 4 query heads over 2 key/value heads, 3 queries, 3 keys
const BATCH = 2
const HEADS = 4
const KV = 2
const T = 3
const GROUPS = BATCH * KV
const ROWS = (HEADS / KV) * T

describe('maskedSoftmax (attention weights keeping only their output)', () => {
  before(async () => {
    await useTestBackend()
  })

  for (const [what, maskShape] of [
    ['a causal mask', [1, 1, T, T]],
    ['a key mask per sequence', [BATCH, 1, 1, T]],
  ] as const) {
    it(`gives softmax(scores + mask) and its gradient as tfjs's ops do (${what})`, () => {
      const scores = tf.variable(
        tf.randomNormal([GROUPS, ROWS, T], 0, 2, 'float32', 5),
      ) as tf.Variable<tf.Rank.R3>
      const mask = tf.tidy(() =>
        tf.mul(
          tf.sub(
            tf
              .randomUniform([...maskShape], 0, 1, 'float32', 6)
              .greater(0.3)
              .toFloat(),
            1,
          ),
          1e9,
        ),
      )
      const c = tf.range(1, GROUPS * ROWS * T + 1).reshape([GROUPS, ROWS, T])
      const fused = () =>
        tf.sum(tf.mul(maskedSoftmax(scores, mask as tf.Tensor4D, BATCH, HEADS), c)) as tf.Scalar
      const composed = () =>
        tf.sum(
          tf.mul(
            tf.reshape(tf.softmax(tf.add(tf.reshape(scores, [BATCH, HEADS, T, T]), mask)), [GROUPS, ROWS, T]),
            c,
          ),
        ) as tf.Scalar
      const f = tapeGradients(fused, [scores])
      const g = tf.variableGrads(composed, [scores])
      const close = (x: number, y: number) => Math.abs(x - y) <= 1e-4 * (1 + Math.abs(y))
      assert.ok(close(f.value.dataSync()[0]!, g.value.dataSync()[0]!))
      const got = f.grads[scores.name]!.dataSync()
      const want = g.grads[scores.name]!.dataSync()
      for (let i = 0; i < want.length; i++)
        assert.ok(close(got[i]!, want[i]!), `[${i}]: ${got[i]} vs ${want[i]}`)
      tf.dispose([f.value, f.grads, g.value, g.grads, scores, mask, c])
    })
  }

  it('keeps only the attention weights for the backward pass', () => {
    const scores = tf.variable(
      tf.randomNormal([GROUPS, ROWS, T], 0, 1, 'float32', 7),
    ) as tf.Variable<tf.Rank.R3>
    const mask = tf.zeros([1, 1, T, T]) as tf.Tensor4D
    const engine = tf.engine() as unknown as { state: { activeTape: { saved?: tf.Tensor[] }[] } }
    let saved: number[][] = []
    const { value, grads } = tapeGradients(() => {
      const from = engine.state.activeTape.length
      const p = maskedSoftmax(scores, mask, BATCH, HEADS)
      saved = engine.state.activeTape.slice(from).flatMap((n) => (n.saved ?? []).map((t) => t.shape))
      return tf.sum(p) as tf.Scalar
    }, [scores])
    assert.deepEqual(saved, [[GROUPS, ROWS, T]])
    tf.dispose([value, grads, scores, mask])
  })
})
