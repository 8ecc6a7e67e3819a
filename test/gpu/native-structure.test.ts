import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import '../../gpu/transformer.ts' // registers segment-sum-kernel.ts's cpu and wasm kernels
import { gatherV2Kernel, unsortedSegmentSumKernel } from '../../gpu/native-kernels/gather.ts'
import {
  concatKernel,
  padV2Kernel,
  sliceKernel,
  splitVKernel,
  stridedSliceKernel,
  tileKernel,
} from '../../gpu/native-kernels/slice.ts'
import { transposeKernel } from '../../gpu/native-kernels/transpose.ts'
import {
  assertNativeMatchesCpu,
  type Input,
  nativeAvailable,
  nativeRuns,
  onBoth,
  randomInput,
  randomValues,
} from '../support/native-compare.ts'

const skip = nativeAvailable ? false : 'the native addon is not built'

/** All permutations of 0..n-1. */
function permutations(n: number): number[][] {
  if (n === 0) return [[]]
  return permutations(n - 1).flatMap((p) =>
    Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]),
  )
}

describe('native data-movement kernels', { skip }, () => {
  it('native kernels - every one is registered for native, UnsortedSegmentSum after segment-sum-kernel.ts', () => {
    const kernels = [
      transposeKernel,
      sliceKernel,
      splitVKernel,
      stridedSliceKernel,
      concatKernel,
      tileKernel,
      padV2Kernel,
      gatherV2Kernel,
      unsortedSegmentSumKernel,
    ]
    for (const k of kernels) assert.ok(nativeRuns(k.kernelName, k.kernelFunc), k.kernelName)
    // segment-sum-kernel.ts (imported above, through transformer.ts) replaced cpu's and wasm's only
    assert.notEqual(
      tf.getKernel(tf.UnsortedSegmentSum, 'cpu')?.kernelFunc,
      unsortedSegmentSumKernel.kernelFunc,
    )
  })

  it('native transpose - every permutation of rank 3 and 4, float32 and int32', async () => {
    for (const shape of [
      [5, 7, 9],
      [3, 4, 2, 5],
    ])
      for (const perm of permutations(shape.length))
        for (const int of [undefined, [-50, 50]] as const)
          await assertNativeMatchesCpu(
            `[${shape}] perm [${perm}]`,
            [randomInput(shape, 1, int as [number, number])],
            (x) => tf.transpose(x, perm),
          )
  })

  it('native transpose - the head permutation, tiled swaps with edges, rank 5 and 6, size-1 axes, empty', async () => {
    const cases: [number[], number[]][] = [
      [
        [16, 64, 4, 32],
        [0, 2, 1, 3],
      ],
      [
        [2, 37, 3, 5],
        [0, 2, 1, 3],
      ],
      [
        [1000, 37],
        [1, 0],
      ],
      [
        [130, 250],
        [1, 0],
      ],
      [
        [3, 67, 129],
        [0, 2, 1],
      ],
      [
        [9, 9],
        [1, 0],
      ],
      [
        [3, 1, 4, 1, 5],
        [4, 2, 0, 3, 1],
      ],
      [
        [2, 3, 4, 5, 6],
        [1, 4, 0, 3, 2],
      ],
      [
        [2, 3, 2, 3, 2, 3],
        [5, 0, 4, 1, 3, 2],
      ],
      [
        [2, 3, 2, 3, 2, 3],
        [0, 1, 2, 3, 5, 4],
      ],
      [
        [0, 3],
        [1, 0],
      ],
      [
        [4, 0, 2],
        [2, 0, 1],
      ],
      [[], []],
    ]
    for (const [shape, perm] of cases) {
      await assertNativeMatchesCpu(`[${shape}] perm [${perm}]`, [randomInput(shape, 2)], (x) =>
        tf.transpose(x, perm),
      )
      await assertNativeMatchesCpu(`[${shape}] perm [${perm}] int32`, [randomInput(shape, 3, [-9, 9])], (x) =>
        tf.transpose(x, perm),
      )
    }
  })

  it('native slice - strided, contiguous, rank 5, -1 sizes, empty, int32', async () => {
    const cases: [number[], number[], number[]][] = [
      [
        [10, 20],
        [2, 3],
        [5, -1],
      ],
      [
        [10, 20],
        [2, 0],
        [3, 20],
      ],
      [
        [300, 400],
        [10, 7],
        [200, 300],
      ],
      [
        [3, 4, 5, 6, 7],
        [1, 0, 2, 1, 3],
        [2, 4, 2, 4, 3],
      ],
      [
        [3, 4, 5, 6, 7],
        [0, 1, 0, 0, 0],
        [3, 2, 5, 6, 7],
      ],
      [
        [10, 20],
        [4, 5],
        [0, 5],
      ],
      [[6], [2], [3]],
      [
        [2, 3, 4],
        [0, 1, 0],
        [2, 2, 4],
      ],
    ]
    for (const [shape, begin, size] of cases)
      for (const int of [undefined, [-100, 100]] as const)
        await assertNativeMatchesCpu(
          `[${shape}] begin [${begin}] size [${size}]`,
          [randomInput(shape, 4, int as [number, number])],
          (x) => tf.slice(x, begin, size),
        )
  })

  it('native splitV - the qkv split of [1008, 384], axis 0 views, -1 sizes, zero-size parts, rank 5, int32', async () => {
    const cases: [number[], number | number[], number][] = [
      [[1008, 384], [128, 128, 128], 1],
      [[6, 4], 3, 0],
      [[4, 6], [2, -1, 1], -1],
      [[4, 6], [2, 0, 4], 1],
      [[2, 3, 8, 2, 3], [3, 5], 2],
      [[2, 3, 8, 2, 3], 3, 4],
      [[1, 1, 12], 4, 2],
    ]
    for (const [shape, splits, axis] of cases)
      for (const int of [undefined, [-100, 100]] as const)
        await assertNativeMatchesCpu(
          `[${shape}] split ${JSON.stringify(splits)} axis ${axis}`,
          [randomInput(shape, 5, int as [number, number])],
          (x) => tf.split(x, splits, axis),
        )
  })

  it('native stridedSlice - steps, negative steps, masks, int32', async () => {
    type Case = [number[], number[], number[], number[], number?, number?, number?, number?, number?]
    const cases: Case[] = [
      [
        [8, 9],
        [1, 8],
        [7, 0],
        [2, -3],
      ],
      [
        [8, 9],
        [0, 0],
        [8, 9],
        [1, 2],
      ],
      [[4, 5, 6], [0, 1], [4, 4], [1, 1], 1, 1, 0, 0, 0],
      [[4, 5, 6], [0, 1], [2, 3], [1, 2], 0, 0, 0, 1, 0],
      [
        [3, 4, 5, 6, 7],
        [0, 1, 0, 1, 6],
        [3, 4, 5, 6, 0],
        [2, 1, 2, 2, -2],
      ],
    ]
    for (const [shape, begin, end, strides, bm, em, el, na, sh] of cases)
      for (const int of [undefined, [-100, 100]] as const)
        await assertNativeMatchesCpu(
          `[${shape}] ${begin}:${end}:${strides}`,
          [randomInput(shape, 6, int as [number, number])],
          (x) => tf.stridedSlice(x, begin, end, strides, bm, em, el, na, sh),
        )
  })

  it('native stridedSlice - a shrunk leading axis (where the cpu kernel reads out of range)', async () => {
    await tf.setBackend('native')
    const values = randomValues(4 * 5 * 6, 7)
    const x = tf.tensor(values, [4, 5, 6])
    const y = tf.stridedSlice(x, [1, 0, 5], [3, 5, 0], [1, 2, -1], 0, 0, 0, 0, 1) // x[1, 0:5:2, 5:0:-1]
    const want: number[] = []
    for (const j of [0, 2, 4]) for (const k of [5, 4, 3, 2, 1]) want.push(values[(1 * 5 + j) * 6 + k]!)
    assert.deepEqual(y.shape, [3, 5])
    assert.deepEqual(Array.from(y.dataSync()), Array.from(Float32Array.from(want)))
    tf.dispose([x, y])
  })

  it('native stridedSlice - a shrunk last axis (the cpu kernel reads the wrong elements: x[1:3, 0:5:2, 5] gives 30, 32, ...)', async () => {
    await tf.setBackend('native')
    const values = randomValues(4 * 5 * 6, 8)
    const x = tf.tensor(values, [4, 5, 6])
    const y = tf.stridedSlice(x, [1, 0, 5], [3, 5, 6], [1, 2, 1], 0, 0, 0, 0, 4) // x[1:3, 0:5:2, 5]
    const empty = tf.stridedSlice(tf.range(0, 10), [8], [2], [1]) // x[8:2] (the cpu kernel throws on it)
    assert.deepEqual(empty.shape, [0])
    empty.dispose()
    const want: number[] = []
    for (const i of [1, 2]) for (const j of [0, 2, 4]) want.push(values[(i * 5 + j) * 6 + 5]!)
    assert.deepEqual(y.shape, [2, 3])
    assert.deepEqual(Array.from(y.dataSync()), Array.from(Float32Array.from(want)))
    tf.dispose([x, y])
  })

  it('native concat - any axis, many inputs, empty inputs, rank 5, int32', async () => {
    const cases: [number[][], number][] = [
      [
        [
          [2, 3],
          [4, 3],
        ],
        0,
      ],
      [
        [
          [2, 3],
          [2, 1],
          [2, 5],
        ],
        1,
      ],
      [
        [
          [2, 3, 4],
          [2, 3, 1],
          [2, 3, 0],
          [2, 3, 2],
        ],
        2,
      ],
      [
        [
          [2, 3, 4],
          [2, 0, 4],
          [2, 5, 4],
        ],
        1,
      ],
      [
        [
          [500, 100],
          [500, 100],
          [500, 50],
        ],
        1,
      ],
      [Array.from({ length: 10 }, (_, k) => [3, k + 1, 2]), 1],
      [
        [
          [2, 3, 2, 4, 1],
          [2, 3, 5, 4, 1],
        ],
        2,
      ],
      [
        [
          [0, 3],
          [0, 3],
        ],
        0,
      ],
      [
        [
          [2, 0],
          [3, 0],
        ],
        0,
      ],
    ]
    for (const [shapes, axis] of cases)
      for (const int of [undefined, [-100, 100]] as const) {
        const inputs: Input[] = shapes.map((s, k) => randomInput(s, 10 + k, int as [number, number]))
        await assertNativeMatchesCpu(`${JSON.stringify(shapes)} axis ${axis}`, inputs, (...xs) =>
          tf.concat(xs, axis),
        )
      }
  })

  it('native tile and pad - rank 1 to 5, constants, empty, int32', async () => {
    const tiles: [number[], number[]][] = [
      [
        [2, 3],
        [2, 3],
      ],
      [[1000], [40]],
      [
        [2, 1, 3, 1, 2],
        [1, 3, 2, 2, 1],
      ],
      [
        [0, 3],
        [2, 2],
      ],
      [
        [3, 4],
        [1, 1],
      ],
    ]
    for (const [shape, reps] of tiles)
      for (const int of [undefined, [-100, 100]] as const)
        await assertNativeMatchesCpu(
          `tile [${shape}] reps [${reps}]`,
          [randomInput(shape, 20, int as [number, number])],
          (x) => tf.tile(x, reps),
        )
    const pads: [number[], [number, number][], number][] = [
      [
        [3, 4],
        [
          [1, 2],
          [0, 3],
        ],
        0,
      ],
      [
        [3, 4],
        [
          [1, 2],
          [0, 3],
        ],
        5,
      ],
      [
        [2, 3, 2, 1, 2],
        [
          [0, 1],
          [1, 0],
          [2, 2],
          [0, 0],
          [1, 1],
        ],
        -1.5,
      ],
      [
        [0, 2],
        [
          [1, 1],
          [0, 0],
        ],
        3,
      ],
      [
        [200, 300],
        [
          [3, 4],
          [5, 6],
        ],
        0,
      ],
    ]
    for (const [shape, paddings, value] of pads)
      for (const int of [undefined, [-100, 100]] as const)
        await assertNativeMatchesCpu(
          `pad [${shape}] ${JSON.stringify(paddings)} ${value}`,
          [randomInput(shape, 21, int as [number, number])],
          (x) => tf.pad(x, paddings, int ? Math.trunc(value) : value),
        )
  })

  it('native gather - embedding rows, inner axes, batchDims, flat logits, int32 data, bad indices', async () => {
    const cases: [number[], number[], number, number, number][] = [
      [[264, 128], [1008], 0, 0, 264],
      [[4, 5, 6], [3], 1, 0, 5],
      [[4, 5, 6], [2, 3], 2, 0, 6],
      [[2, 5, 3], [2, 4], 1, 1, 5],
      [[16128], [1008], 0, 0, 16128],
      [[3, 4], [0], 0, 0, 3],
      [[2, 3, 4, 5, 6], [7], 3, 0, 5],
    ]
    for (const [shape, idxShape, axis, batchDims, dim] of cases)
      for (const int of [undefined, [-100, 100]] as const) {
        const idx: Input = {
          values: randomValues(
            idxShape.reduce((a, b) => a * b, 1),
            31,
            [0, dim],
          ),
          shape: idxShape,
          dtype: 'int32',
        }
        await assertNativeMatchesCpu(
          `gather [${shape}] at [${idxShape}] axis ${axis} batchDims ${batchDims}`,
          [randomInput(shape, 30, int as [number, number]), idx],
          (x, i) => tf.gather(x, i!, axis, batchDims),
        )
      }
    await tf.setBackend('native')
    const x = tf.tensor2d([1, 2, 3, 4], [2, 2])
    assert.throws(
      () => tf.gather(x, tf.tensor1d([0, 2], 'int32')),
      /GatherV2: the index value 2 is not in \[0, 1\]/,
    )
    assert.throws(
      () => tf.gather(x, tf.tensor1d([-1], 'int32')),
      /GatherV2: the index value -1 is not in \[0, 1\]/,
    )
    x.dispose()
  })

  it('native unsortedSegmentSum - repeated and dropped ids, rank 3, 2-D ids, the embedding gradient', async () => {
    const cases: [number[], number[], number][] = [
      [[50, 16], [50], 10],
      [[1008, 128], [1008], 264],
      [[20, 3, 4], [20], 7],
      [[4, 5, 6], [4, 5], 9],
      [[30], [30], 5],
      [[0, 4], [0], 3],
    ]
    for (const [shape, idShape, segments] of cases) {
      const n = idShape.reduce((a, b) => a * b, 1)
      const ids: Input = { values: randomValues(n, 41, [-1, segments + 1]), shape: idShape, dtype: 'int32' }
      await assertNativeMatchesCpu(
        `[${shape}] ids [${idShape}] into ${segments}`,
        [randomInput(shape, 40), ids],
        (x, i) => tf.unsortedSegmentSum(x, i as tf.Tensor1D, segments),
      )
    }
  })

  it('native gradients - through split, concat, transpose, gather, slice, pad, tile and sum, as on cpu', async () => {
    const x: Input = randomInput([6, 6], 50)
    const w: Input = randomInput([5, 6], 51)
    const idx: Input = { values: [4, 0, 4], shape: [3], dtype: 'int32' }
    const { native, cpu } = await onBoth([x, w, idx], (xt, wt, it) => {
      const f = (a: tf.Tensor, b: tf.Tensor) => {
        const [p, q, r] = tf.split(a, [2, 3, 1], 1)
        const joined = tf.concat([r!, p!, q!], 1) // [6, 6]
        const t = tf.transpose(tf.reshape(joined, [2, 3, 6]), [1, 0, 2]) // [3, 2, 6]
        const g = tf.reshape(tf.gather(b, it!), [3, 1, 6])
        const s = tf.slice(
          tf.pad(t, [
            [0, 0],
            [1, 0],
            [0, 2],
          ]),
          [0, 0, 1],
          [3, 3, 6],
        ) // [3, 3, 6]
        const tiled = tf.tile(g, [1, 3, 1])
        return tf.add(tf.sum(tf.mul(tf.softmax(s), tiled)), tf.mean(tf.square(t), [0, 2]).sum())
      }
      const { value, grads } = tf.valueAndGrads(f)([xt!, wt!])
      return [value, ...grads]
    })
    assert.equal(native.length, 3)
    for (let k = 0; k < 3; k++)
      for (let i = 0; i < cpu[k]!.values.length; i++)
        assert.ok(
          Math.abs(native[k]!.values[i]! - cpu[k]!.values[i]!) <= 1e-6 + 1e-5 * Math.abs(cpu[k]!.values[i]!),
          `output ${k}[${i}]`,
        )
  })
})
