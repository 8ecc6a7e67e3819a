import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  argMaxKernel,
  argMinKernel,
  maxKernel,
  meanKernel,
  minKernel,
  prodKernel,
  reductionBlock,
  sumKernel,
} from '../../gpu/native-kernels/reduce.ts'
import { softmaxKernel } from '../../gpu/native-kernels/softmax.ts'
import {
  assertNativeMatchesCpu,
  type Input,
  nativeAvailable,
  nativeRuns,
  randomInput,
  randomValues,
} from '../support/native-compare.ts'

const skip = nativeAvailable ? false : 'the native addon is not built'

/** Reductions of [outer, r, inner] seen through float64 sums against cpu's sequential float64 sums. */
const RTOL = 1e-6
const ATOL = 1e-6

type Reduce = (x: tf.Tensor, axis: number | number[] | undefined, keepDims: boolean) => tf.Tensor
const REDUCTIONS: [string, Reduce][] = [
  ['sum', (x, a, k) => tf.sum(x, a, k)],
  ['mean', (x, a, k) => tf.mean(x, a, k)],
  ['max', (x, a, k) => tf.max(x, a, k)],
  ['min', (x, a, k) => tf.min(x, a, k)],
  ['prod', (x, a, k) => tf.prod(x, a, k)],
]

describe('native reductions and softmax', { skip }, () => {
  it('native reduce - every kernel is registered for native', () => {
    for (const k of [
      sumKernel,
      meanKernel,
      maxKernel,
      minKernel,
      prodKernel,
      argMaxKernel,
      argMinKernel,
      softmaxKernel,
    ])
      assert.ok(nativeRuns(k.kernelName, k.kernelFunc), k.kernelName)
  })

  it('native reduce - axes fold into one [outer, r, inner] block, size-1 axes aside', () => {
    assert.deepEqual(reductionBlock([3, 4, 5], [1]), { outer: 3, r: 4, inner: 5 })
    assert.deepEqual(reductionBlock([3, 4, 5], [0, 1]), { outer: 1, r: 12, inner: 5 })
    assert.deepEqual(reductionBlock([3, 1, 5], [0, 2]), { outer: 1, r: 15, inner: 1 })
    assert.deepEqual(reductionBlock([3, 4, 5], [0, 2]), undefined)
  })

  it('native reduce - sum, mean, max, min, prod over any axes of rank 2 to 5, keepDims', async () => {
    const cases: [number[], (number | number[] | undefined)[]][] = [
      [
        [7, 9],
        [undefined, 0, 1, [0, 1], -1],
      ],
      [
        [3, 4, 5, 6, 2],
        [[1], [1, 2], [0, 2, 4], [4], [0], [1, 3], undefined],
      ],
      [
        [3, 1, 5],
        [[0, 2], 1, [1, 2]],
      ],
      [
        [1, 1, 7],
        [0, [0, 1], 2],
      ],
      [[6], [0]],
    ]
    for (const [shape, axes] of cases)
      for (const axis of axes)
        for (const keepDims of [false, true])
          for (const [name, f] of REDUCTIONS) {
            const x = randomInput(shape, 1)
            if (name === 'prod') x.values = Array.from(x.values, (v) => 1 + v / 4) // products near 1
            await assertNativeMatchesCpu(
              `${name} [${shape}] axis ${JSON.stringify(axis)} keepDims ${keepDims}`,
              [x],
              (t) => f(t, axis, keepDims),
              RTOL,
              ATOL,
            )
          }
  })

  it('native reduce - int32 data (sum, max, min and prod in int32, mean in float32)', async () => {
    for (const [shape, axis] of [
      [[5, 6, 7], 1],
      [
        [5, 6, 7],
        [0, 2],
      ],
      [[40, 30], undefined],
      [
        [2, 3, 4, 5, 3],
        [1, 2],
      ],
    ] as [number[], number | number[] | undefined][])
      for (const [name, f] of REDUCTIONS) {
        const x = randomInput(shape, 2, name === 'prod' ? [-2, 3] : [-1000, 1000])
        await assertNativeMatchesCpu(
          `${name} int32 [${shape}] axis ${JSON.stringify(axis)}`,
          [x],
          (t) => f(t, axis, false),
          RTOL,
          ATOL,
        )
      }
    // int32 sums that wrap as an Int32Array store does
    const big: Input = { values: [2 ** 30, 2 ** 30, 2 ** 30, -5], shape: [4], dtype: 'int32' }
    await assertNativeMatchesCpu('sum int32 past 2^31', [big], (t) => tf.sum(t))
  })

  it('native reduce - large tensors (threads: rows, columns, split runs)', async () => {
    const cases: [number[], number | number[] | undefined][] = [
      [[4096, 64], -1],
      [[4096, 64], 0],
      [[1, 200000], undefined],
      [[3, 70000], 1],
      [[64, 700, 3], 1],
      [[1008, 264], -1],
    ]
    for (const [shape, axis] of cases)
      for (const [name, f] of REDUCTIONS) {
        if (name === 'prod') continue
        await assertNativeMatchesCpu(
          `${name} [${shape}] axis ${JSON.stringify(axis)}`,
          [randomInput(shape, 3)],
          (t) => f(t, axis, false),
          RTOL,
          ATOL,
        )
      }
  })

  it('native reduce - NaN and infinities in max and min, as on cpu', async () => {
    const values = randomValues(60, 4)
    values[7] = Number.NaN
    values[33] = Number.POSITIVE_INFINITY
    values[34] = Number.NEGATIVE_INFINITY
    values[0] = Number.NaN
    for (const axis of [0, 1, undefined])
      for (const [name, f] of REDUCTIONS.slice(0, 4))
        await assertNativeMatchesCpu(
          `${name} with NaN axis ${axis}`,
          [{ values, shape: [6, 10] }],
          (t) => f(t, axis, false),
          RTOL,
          ATOL,
        )
  })

  it('native argMax and argMin - any axis, ties take the first, int32, rank 5, large', async () => {
    const cases: [number[], number][] = [
      [[6, 7, 8], 0],
      [[6, 7, 8], 1],
      [[6, 7, 8], -1],
      [[2, 3, 4, 5, 6], 3],
      [[64, 5000], 1],
      [[5000, 64], 0],
      [[9], 0],
    ]
    for (const [shape, axis] of cases)
      for (const int of [undefined, [-3, 3]] as const) {
        const x = randomInput(shape, 5, int as [number, number] | undefined)
        if (!int) x.values = Array.from(x.values, (v) => Math.round(v * 4)) // ties
        await assertNativeMatchesCpu(`argMax [${shape}] axis ${axis}`, [x], (t) => tf.argMax(t, axis))
        await assertNativeMatchesCpu(`argMin [${shape}] axis ${axis}`, [x], (t) => tf.argMin(t, axis))
      }
  })

  it('native reduce - empty tensors', async () => {
    for (const [name, f] of REDUCTIONS.filter(([n]) => n === 'sum' || n === 'mean' || n === 'prod'))
      for (const axis of [0, 1, undefined])
        await assertNativeMatchesCpu(`${name} [0, 4] axis ${axis}`, [randomInput([0, 4], 6)], (t) =>
          f(t, axis, false),
        )
    await assertNativeMatchesCpu('max [3, 0] axis 0', [randomInput([3, 0], 6)], (t) => tf.max(t, 0))
  })

  it('native softmax - rows of the last axis, masked -1e9 entries, large logits, NaN rows, empty', async () => {
    const cases: number[][] = [
      [64, 64, 64],
      [3, 5],
      [17],
      [2, 3, 4, 5, 6],
      [4, 1000],
      [1, 40000],
      [2, 0],
      [0, 3],
    ]
    for (const shape of cases)
      await assertNativeMatchesCpu(
        `softmax [${shape}]`,
        [randomInput(shape, 7)],
        (t) => tf.softmax(t),
        2e-6,
        1e-7,
      )
    const masked = randomValues(4 * 9, 8).map((v, i) => (i % 9 > Math.floor(i / 9) + 4 ? -1e9 : v * 30))
    await assertNativeMatchesCpu(
      'softmax masked',
      [{ values: masked, shape: [4, 9] }],
      (t) => tf.softmax(t),
      2e-6,
      1e-7,
    )
    const wide = randomValues(3 * 50, 9).map((v) => v * 80)
    await assertNativeMatchesCpu(
      'softmax of logits in [-80, 80]',
      [{ values: wide, shape: [3, 50] }],
      (t) => tf.softmax(t),
      2e-6,
      1e-7,
    )
    const nan = randomValues(2 * 6, 10)
    nan[8] = Number.NaN
    await assertNativeMatchesCpu(
      'softmax with a NaN row',
      [{ values: nan, shape: [2, 6] }],
      (t) => tf.softmax(t),
      2e-6,
      1e-7,
    )
  })

  it('native softmax - logSoftmax, logSumExp and the softmax gradient, as on cpu', async () => {
    const x = randomInput([6, 264], 11)
    x.values = Array.from(x.values, (v) => v * 10)
    await assertNativeMatchesCpu('logSoftmax', [x], (t) => tf.logSoftmax(t), 2e-6, 1e-6)
    await assertNativeMatchesCpu('logSumExp', [x], (t) => tf.logSumExp(t, -1), 2e-6, 1e-6)
    const dy = randomInput([6, 264], 12)
    await assertNativeMatchesCpu(
      'softmax gradient',
      [x, dy],
      (t, d) => tf.grad((z: tf.Tensor) => tf.sum(tf.mul(tf.softmax(z), d!)))(t),
      2e-5,
      1e-7,
    )
  })
})
