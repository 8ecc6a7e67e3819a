import * as tf from '@tensorflow/tfjs'
import type { NativeKernel } from './native-kernel.ts'
import { cpuKernel, newWords, sizeOf, transposeWords, wordValues } from './words.ts'

/** The addon's reduction codes (`NativeAddon.reduce`'s `op`). */
export const ReduceOp = { Sum: 0, Mean: 1, Max: 2, Min: 3, Prod: 4, ArgMax: 5, ArgMin: 6 } as const
export type ReduceOp = (typeof ReduceOp)[keyof typeof ReduceOp]

/**
 * The reduction of `shape` over `axes` as `[outer, r, inner]` when the reduced axes, size-1 axes
 * aside, are one block of adjacent axes; `undefined` otherwise (they are transposed innermost first).
 */
export function reductionBlock(
  shape: readonly number[],
  axes: readonly number[],
): { outer: number; r: number; inner: number } | undefined {
  const reduced = new Set(axes)
  let outer = 1
  let r = 1
  let inner = 1
  let state = 0 // 0 before the block, 1 in it, 2 after it
  for (let k = 0; k < shape.length; k++) {
    const n = shape[k]!
    if (n === 1) continue
    if (reduced.has(k)) {
      if (state === 2) return undefined
      state = 1
      r *= n
    } else if (state === 0) {
      outer *= n
    } else {
      state = 2
      inner *= n
    }
  }
  return { outer, r, inner }
}

/**
 * A reduction kernel over any set of axes (attr `axisAttr`, all when absent) of a float32 or int32
 * tensor, with attr `keepDims`: the axes folded into `[outer, r, inner]` (a native transposition
 * first when the reduced axes are not adjacent), then one native reduction. Output dtype: Mean
 * float32, ArgMax/ArgMin int32, others x's. Empty x and other dtypes go to the cpu kernel.
 */
function reductionKernel(
  kernelName: string,
  op: ReduceOp,
  axisAttr: 'axis' | 'reductionIndices',
): NativeKernel {
  const arg = op === ReduceOp.ArgMax || op === ReduceOp.ArgMin
  return {
    kernelName,
    kernelFunc: (args) => {
      const { x } = args.inputs as { x: tf.TensorInfo }
      const attrs = (args.attrs ?? {}) as Record<string, unknown>
      const { backend } = args
      const v = wordValues(backend, x)
      if (!v || v.length === 0 || x.shape.length > 16) return cpuKernel(kernelName, args)
      let axes = tf.util.parseAxisParam(attrs[axisAttr] as number | number[], x.shape)
      if (arg) axes = [axes[0]!]
      const [outShape] = tf.backend_util.computeOutAndReduceShapes(x.shape, axes)
      let src = v
      let block = reductionBlock(x.shape, axes)
      if (!block) {
        const perm = tf.backend_util.getAxesPermutation(axes, x.shape.length)!
        src = transposeWords(backend, v, x.dtype, x.shape, perm)
        const outer = sizeOf(outShape!)
        block = { outer, r: v.length / outer, inner: 1 }
      }
      const dtype: tf.DataType = op === ReduceOp.Mean ? 'float32' : arg ? 'int32' : x.dtype
      const out = newWords(backend, dtype, sizeOf(outShape!))
      backend.addon.reduce(src, out, block.outer, block.r, block.inner, op, x.dtype === 'int32')
      const shape = attrs.keepDims ? tf.backend_util.expandShapeToKeepDim(outShape!, axes) : outShape!
      return backend.output(out, shape, dtype)
    },
  }
}

/** `Sum` over attr `axis` (float32 -> float32, int32 -> int32 wrapping as the cpu backend), accumulated in double. */
export const sumKernel: NativeKernel = reductionKernel(tf.Sum, ReduceOp.Sum, 'axis')
/** `Mean` over attr `axis` (float32 or int32 -> float32), accumulated in double. */
export const meanKernel: NativeKernel = reductionKernel(tf.Mean, ReduceOp.Mean, 'axis')
/** `Max` over attr `reductionIndices` (dtype kept); NaN when a NaN is reduced. */
export const maxKernel: NativeKernel = reductionKernel(tf.Max, ReduceOp.Max, 'reductionIndices')
/** `Min` over attr `axis` (dtype kept); NaN when a NaN is reduced. */
export const minKernel: NativeKernel = reductionKernel(tf.Min, ReduceOp.Min, 'axis')
/** `Prod` over attr `axis` (dtype kept), accumulated in double. */
export const prodKernel: NativeKernel = reductionKernel(tf.Prod, ReduceOp.Prod, 'axis')
/** `ArgMax` along attr `axis` -> int32 index of the first maximum. */
export const argMaxKernel: NativeKernel = reductionKernel(tf.ArgMax, ReduceOp.ArgMax, 'axis')
/** `ArgMin` along attr `axis` -> int32 index of the first minimum. */
export const argMinKernel: NativeKernel = reductionKernel(tf.ArgMin, ReduceOp.ArgMin, 'axis')
