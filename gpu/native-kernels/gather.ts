import * as tf from '@tensorflow/tfjs'
import type { NativeKernel } from './native-kernel.ts'
import { cpuKernel, newWords, sizeOf, wordValues } from './words.ts'

/**
 * `GatherV2`: x float32 or int32 gathered at int32 `indices` along attr `axis`, with attr
 * `batchDims` leading dims shared by x and indices: output `[...x.shape[:axis], ...indices.shape[batchDims:],
 * ...x.shape[axis+1:]]` (an embedding's rows, a rope table's rows, flat logits at picked indices).
 * An index outside `[0, x.shape[axis])` throws the cpu backend's Error. Other dtypes and empty
 * outputs go to the cpu kernel.
 */
export const gatherV2Kernel: NativeKernel = {
  kernelName: tf.GatherV2,
  kernelFunc: (args) => {
    const { x, indices } = args.inputs as { x: tf.TensorInfo; indices: tf.TensorInfo }
    const { axis, batchDims } = args.attrs as unknown as { axis: number; batchDims?: number } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const v = wordValues(backend, x)
    const idx = indices.dtype === 'int32' ? backend.values(indices) : undefined
    if (!v || !(idx instanceof Int32Array)) return cpuKernel(tf.GatherV2, args)
    const $axis = tf.util.parseAxisParam(axis, x.shape)[0]!
    const info = tf.backend_util.segment_util.collectGatherOpShapeInfo(
      x as tf.Tensor,
      indices as tf.Tensor,
      $axis,
      batchDims ?? 0,
    )
    const size = sizeOf(info.outputShape)
    if (size === 0) return cpuKernel(tf.GatherV2, args)
    const out = newWords(backend, x.dtype, size)
    backend.addon.gather(
      v,
      idx,
      out,
      info.batchSize,
      info.outerSize,
      info.dimSize,
      info.sliceSize,
      idx.length / info.batchSize,
    )
    return backend.output(out, info.outputShape, x.dtype)
  },
}

/**
 * `UnsortedSegmentSum`, the gradient of a gather: float32 x `[n, ...inner]`, int32 `segmentIds`
 * (shape a prefix of x's, n elements), attr `numSegments` -> float32 `[numSegments, ...inner]`,
 * `out[s] = sum of x[i] over i with segmentIds[i] = s` (ids outside `[0, numSegments)` dropped).
 * One pass over x, the same float32 additions in the same order as `segment-sum-kernel.ts`'s loop
 * (threads take column ranges). Int32 x goes to the cpu kernel as registered at the call.
 */
export const unsortedSegmentSumKernel: NativeKernel = {
  kernelName: tf.UnsortedSegmentSum,
  kernelFunc: (args) => {
    const { x, segmentIds } = args.inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo }
    const { numSegments } = args.attrs as unknown as { numSegments: number } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const xv = x.dtype === 'float32' ? backend.values(x) : undefined
    const ids = segmentIds.dtype === 'int32' ? backend.values(segmentIds) : undefined
    if (!(xv instanceof Float32Array) || !(ids instanceof Int32Array))
      return cpuKernel(tf.UnsortedSegmentSum, args)
    const rest = x.shape.slice(segmentIds.shape.length)
    const inner = sizeOf(rest)
    const out = backend.allocate('float32', numSegments * inner) as Float32Array
    backend.addon.unsortedSegmentSum(xv, ids, out, ids.length, inner, numSegments)
    return backend.output(out, [numSegments, ...rest], 'float32')
  },
}
