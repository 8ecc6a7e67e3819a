import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { AdamW, ConfigError, ShapeError } from '../../gpu/index.ts'
import { useTestBackend } from '../support/test-backend.ts'

/** Plain-loop AdamW (PyTorch form) on one parameter, for comparison. */
function reference(p: number[], grads: number[][], lr: number, wd: number, clip: number[]) {
  const [b1, b2, eps] = [0.9, 0.95, 1e-8]
  const m = p.map(() => 0)
  const v = p.map(() => 0)
  grads.forEach((g0, step) => {
    const t = step + 1
    const g = g0.map((x) => x * clip[step]!)
    for (let i = 0; i < p.length; i++) {
      m[i] = b1 * m[i]! + (1 - b1) * g[i]!
      v[i] = b2 * v[i]! + (1 - b2) * g[i]! ** 2
      const mh = m[i]! / (1 - b1 ** t)
      const vh = v[i]! / (1 - b2 ** t)
      p[i] = p[i]! * (1 - lr * wd) - (lr * mh) / (Math.sqrt(vh) + eps)
    }
  })
  return p
}

describe('gpu/adamw', () => {
  before(async () => {
    await useTestBackend()
  })

  it('adamw - matches a plain loop, with decay on matrices only', async () => {
    const w = tf.variable(
      tf.tensor2d([
        [0.5, -1],
        [2, 0.25],
      ]),
    )
    const g = tf.variable(tf.tensor1d([1, 1]))
    const params = new Map<string, tf.Variable>([
      ['w', w],
      ['g', g],
    ])
    const opt = new AdamW(params, { weightDecay: 0.1, gradClip: 100 })
    const gw = [
      [0.1, -0.2, 0.3, 0.05],
      [0.2, 0.1, -0.1, 0.0],
      [-0.3, 0.4, 0.2, 0.1],
    ]
    const gg = [
      [0.5, -0.5],
      [0.1, 0.2],
      [0.3, 0.3],
    ]
    for (let s = 0; s < 3; s++) {
      const grads = { w: tf.tensor2d(gw[s]!, [2, 2]), g: tf.tensor1d(gg[s]!) }
      const info = await opt.step(grads, 0.01)
      assert.equal(info.clipScale, 1)
      assert.equal(info.step, s + 1)
      tf.dispose(Object.values(grads))
    }
    const wantW = reference([0.5, -1, 2, 0.25], gw, 0.01, 0.1, [1, 1, 1])
    const wantG = reference([1, 1], gg, 0.01, 0, [1, 1, 1])
    const gotW = await w.data()
    const gotG = await g.data()
    for (const [i, x] of wantW.entries()) assert.ok(Math.abs(gotW[i]! - x) < 1e-6, `w[${i}]`)
    for (const [i, x] of wantG.entries()) assert.ok(Math.abs(gotG[i]! - x) < 1e-6, `g[${i}]`)
    opt.dispose()
    tf.dispose([w, g])
  })

  it('adamw - clips the global gradient norm', async () => {
    const w = tf.variable(tf.tensor1d([0, 0]))
    const u = tf.variable(tf.tensor1d([0]))
    const opt = new AdamW(
      new Map([
        ['w', w],
        ['u', u],
      ]),
      { weightDecay: 0, gradClip: 1 },
    )
    const grads = { w: tf.tensor1d([3, 0]), u: tf.tensor1d([4]) }
    const info = await opt.step(grads, 0.1)
    assert.ok(Math.abs(info.gradNorm - 5) < 1e-6)
    assert.ok(Math.abs(info.clipScale - 1 / (5 + 1e-6)) < 1e-9)
    // First Adam step moves each coordinate by lr * sign(g) whatever the scale.
    const got = await w.data()
    assert.ok(Math.abs(got[0]! + 0.1) < 1e-5 && got[1] === 0)
    // a norm the caller already computed is the one clipped by
    const known = await opt.step(grads, 0.1, 10)
    assert.equal(known.gradNorm, 10)
    assert.equal(known.clipScale, 1 / (10 + 1e-6))
    tf.dispose(Object.values(grads))
    opt.dispose()
    tf.dispose([w, u])
  })

  it('adamw - state round-trips and bad input is rejected', async () => {
    const w = tf.variable(tf.tensor1d([1, 2]))
    const opt = new AdamW(new Map([['w', w]]))
    const g = tf.tensor1d([0.5, -0.5])
    await opt.step({ w: g }, 0.1)
    const state = await opt.state()
    assert.equal(state.step, 1)
    assert.ok(Math.abs(state.tensors['m.w']![0]! - 0.05) < 1e-7)
    const other = new AdamW(new Map([['w', w]]))
    other.loadState(state)
    assert.equal(other.stepCount, 1)
    assert.deepEqual(await other.state(), state)
    await assert.rejects(opt.step({ w: tf.tensor1d([1]) }, 0.1), ShapeError)
    await assert.rejects(opt.step({ nope: g }, 0.1), ShapeError)
    await assert.rejects(opt.step({ w: tf.tensor1d([Number.NaN, 0]) }, 0.1), /not finite/)
    assert.throws(() => new AdamW(new Map(), { beta1: 1 }), ConfigError)
    assert.throws(() => other.loadState({ step: 1, tensors: {} }), ShapeError)
    tf.dispose([g, w])
    opt.dispose()
    other.dispose()
  })

  it('adamw - a step leaks no tensors', async () => {
    const w = tf.variable(tf.randomNormal([4, 4], 0, 1, 'float32', 1))
    const opt = new AdamW(new Map([['w', w]]), { gradClip: 0.1 })
    const g = tf.ones([4, 4])
    await opt.step({ w: g }, 0.1)
    const before = tf.memory().numTensors
    await opt.step({ w: g }, 0.1)
    assert.equal(tf.memory().numTensors, before)
    tf.dispose([g, w])
    opt.dispose()
  })
})
