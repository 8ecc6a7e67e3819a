import * as tf from '@tensorflow/tfjs'
import type { NativeBackend } from '../native-backend.ts'
import type { NativeKernel } from './native-kernel.ts'
import { cpuKernel, newWords, sizeOf, stridesOf, wordValues } from './words.ts'

/** Flat offset of index `begin` under `strides`. */
function offsetOf(begin: readonly number[], strides: readonly number[]): number {
  let o = 0
  for (let k = 0; k < begin.length; k++) o += begin[k]! * strides[k]!
  return o
}

/** A strided copy from `src` into a new contiguous array of `shape`. */
function gatherView(
  backend: NativeBackend,
  src: Float32Array | Int32Array,
  dtype: tf.DataType,
  offset: number,
  shape: readonly number[],
  srcStrides: readonly number[],
): Float32Array | Int32Array {
  const out = newWords(backend, dtype, sizeOf(shape))
  if (out.length > 0)
    backend.addon.stridedCopy(
      src,
      offset,
      out,
      0,
      Int32Array.from(shape),
      Int32Array.from(srcStrides),
      Int32Array.from(stridesOf(shape)),
    )
  return out
}

/**
 * `Slice`: x `[...]` float32 or int32, attrs `begin`, `size` (-1: to the end) -> `[...size]`. A
 * contiguous slice is a view of x's values (as on the cpu backend), any other one strided copy.
 */
export const sliceKernel: NativeKernel = {
  kernelName: tf.Slice,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const { begin, size } = args.attrs as unknown as { begin: number | number[]; size: number | number[] } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v) return cpuKernel(tf.Slice, args)
    const [$begin, $size] = tf.slice_util.parseSliceParams(x as tf.Tensor, begin, size)
    tf.slice_util.assertParamsValid(x as tf.Tensor, $begin, $size)
    const strides = stridesOf(x.shape)
    const offset = offsetOf($begin, strides)
    if (tf.slice_util.isSliceContinous(x.shape, $begin, $size)) {
      const n = sizeOf($size)
      return backend.output(v.subarray(offset, offset + n), $size, x.dtype)
    }
    return backend.output(gatherView(backend, v, x.dtype, offset, $size, strides), $size, x.dtype)
  },
}

/**
 * `SplitV`: x float32 or int32 split along attr `axis` into parts of attr `numOrSizeSplits` (a
 * count of equal parts, or sizes with at most one -1); returns one tensor per part. Parts along
 * the outermost non-trivial axis are views of x's values; others are filled by one native call.
 */
export const splitVKernel: NativeKernel = {
  kernelName: tf.SplitV,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const { numOrSizeSplits, axis } = args.attrs as unknown as {
      // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
      numOrSizeSplits: number | number[]
      axis: number
    }
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v) return cpuKernel(tf.SplitV, args)
    const $axis = tf.util.parseAxisParam(axis, x.shape)[0]!
    const sizes = tf.backend_util.prepareSplitSize(x as tf.Tensor, numOrSizeSplits, $axis)
    const rows = sizeOf(x.shape.slice(0, $axis))
    const inner = sizeOf(x.shape.slice($axis + 1))
    const shapeOf = (s: number) => x.shape.map((d, k) => (k === $axis ? s : d))
    if (rows === 1) {
      let at = 0
      return sizes.map((s) => {
        const part = v.subarray(at, at + s * inner)
        at += s * inner
        return backend.output(part, shapeOf(s), x.dtype)
      })
    }
    const parts = sizes.map((s) => newWords(backend, x.dtype, rows * s * inner))
    backend.addon.split(
      v,
      rows,
      parts,
      Int32Array.from(sizes, (s) => s * inner),
    )
    return parts.map((p, k) => backend.output(p, shapeOf(sizes[k]!), x.dtype))
  },
}

/**
 * `Concat`: the inputs (float32 or int32, one dtype) joined along attr `axis`, by one native call
 * over all of them. Mixed dtypes, other dtypes and a single non-empty input go to the cpu kernel.
 */
export const concatKernel: NativeKernel = {
  kernelName: tf.Concat,
  kernelFunc: (args) => {
    const inputs = args.inputs as unknown as tf.TensorInfo[] // cast: tfjs types inputs as a name map; this op passes them as an array
    const { axis } = args.attrs as unknown as { axis: number | number[] } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const dtype = inputs[0]!.dtype
    const values = inputs.map((t) => (t.dtype === dtype ? wordValues(backend, t) : undefined))
    const $axis = tf.util.parseAxisParam(axis, inputs[0]!.shape)[0]!
    const shapes = inputs.map((t) => t.shape)
    tf.backend_util.assertParamsConsistent(shapes, $axis)
    const outShape = tf.backend_util.computeOutShape(shapes, $axis)
    const nonEmpty = inputs.map((t, k) => [t, values[k]] as const).filter(([t]) => sizeOf(t.shape) > 0)
    if (values.some((w) => !w) || nonEmpty.length < 2) return cpuKernel(tf.Concat, args)
    const rows = sizeOf(outShape.slice(0, $axis))
    const out = newWords(backend, dtype, sizeOf(outShape))
    backend.addon.concat(
      nonEmpty.map(([, w]) => w!),
      Int32Array.from(nonEmpty, ([t]) => sizeOf(t.shape) / rows),
      out,
      rows,
    )
    return backend.output(out, outShape, dtype)
  },
}

/**
 * `StridedSlice`: x float32 or int32 with attrs `begin`, `end`, `strides` and the five masks (as in
 * TensorFlow), one strided copy (negative strides included). Shrunk axes work here (the cpu
 * kernel's general path reads out of range with `shrinkAxisMask`). An identity slice (a reshape)
 * and other dtypes go to the cpu kernel.
 */
export const stridedSliceKernel: NativeKernel = {
  kernelName: tf.StridedSlice,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const a = args.attrs as unknown as {
      // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
      begin: number[]
      end: number[]
      strides: number[]
      beginMask: number
      endMask: number
      ellipsisMask: number
      newAxisMask: number
      shrinkAxisMask: number
    }
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v) return cpuKernel(tf.StridedSlice, args)
    const info = tf.slice_util.sliceInfo(
      x.shape,
      a.begin,
      a.end,
      a.strides,
      a.beginMask,
      a.endMask,
      a.ellipsisMask,
      a.newAxisMask,
      a.shrinkAxisMask,
    )
    // the dense processing shape (one size per axis of x; tfjs's finalShapeSparse loses shrunk axes)
    const sizes = info.begin.map((b, k) => Math.max(0, Math.ceil((info.end[k]! - b) / info.strides[k]!)))
    if (
      info.isIdentity ||
      sizes.length !== x.shape.length ||
      x.shape.length > 16 ||
      sizeOf(sizes) !== sizeOf(info.finalShape)
    )
      return cpuKernel(tf.StridedSlice, args)
    const strides = stridesOf(x.shape)
    const out =
      sizeOf(sizes) === 0
        ? newWords(backend, x.dtype, 0)
        : gatherView(
            backend,
            v,
            x.dtype,
            offsetOf(info.begin, strides),
            sizes,
            strides.map((s, k) => s * info.strides[k]!),
          )
    return backend.output(out, info.finalShape, x.dtype)
  },
}

/**
 * `Tile`: x float32 or int32 `[d0, ...]` repeated attr `reps` times per axis -> `[d0 reps0, ...]`,
 * one strided copy of rank 2 x rank (source stride 0 over the repeats); rank up to 8.
 */
export const tileKernel: NativeKernel = {
  kernelName: tf.Tile,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const { reps } = args.attrs as unknown as { reps: number[] } // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v || x.shape.length > 8 || reps.length !== x.shape.length) return cpuKernel(tf.Tile, args)
    const outShape = x.shape.map((d, k) => d * reps[k]!)
    const out = newWords(backend, x.dtype, sizeOf(outShape))
    if (out.length > 0) {
      const xs = stridesOf(x.shape)
      const os = stridesOf(outShape)
      const shape: number[] = []
      const ss: number[] = []
      const ds: number[] = []
      for (let k = 0; k < x.shape.length; k++) {
        shape.push(reps[k]!, x.shape[k]!)
        ss.push(0, xs[k]!)
        ds.push(x.shape[k]! * os[k]!, os[k]!)
      }
      backend.addon.stridedCopy(
        v,
        0,
        out,
        0,
        Int32Array.from(shape),
        Int32Array.from(ss),
        Int32Array.from(ds),
      )
    }
    return backend.output(out, outShape, x.dtype)
  },
}

/**
 * `PadV2`: x float32 or int32 with attr `paddings` (`[before, after]` per axis, >= 0) filled with
 * attr `constantValue`: the output filled, then x copied into its interior (one strided copy).
 */
export const padV2Kernel: NativeKernel = {
  kernelName: tf.PadV2,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const { paddings, constantValue } = args.attrs as unknown as {
      // cast: tfjs types a kernel's attrs as a NamedAttrMap; these are the attrs its op passes
      paddings: [number, number][]
      constantValue: number
    }
    const { backend } = args
    const v = wordValues(backend, x)
    if (!v || x.shape.length > 16 || paddings.some(([b, e]) => b < 0 || e < 0))
      return cpuKernel(tf.PadV2, args)
    const outShape = paddings.map(([b, e], k) => b + x.shape[k]! + e)
    const out = newWords(backend, x.dtype, sizeOf(outShape))
    if (constantValue !== 0) out.fill(constantValue)
    if (v.length > 0) {
      const os = stridesOf(outShape)
      backend.addon.stridedCopy(
        v,
        0,
        out,
        offsetOf(
          paddings.map(([b]) => b),
          os,
        ),
        Int32Array.from(x.shape),
        Int32Array.from(stridesOf(x.shape)),
        Int32Array.from(os),
      )
    }
    return backend.output(out, outShape, x.dtype)
  },
}
