import * as tf from '@tensorflow/tfjs'

/**
 * A linear-time `UnsortedSegmentSum` kernel for the wasm and cpu backends:
 * `out[s, ...] = sum over i with segmentIds[i] = s of x[i, ...]` (ids outside `[0, numSegments)`
 * are dropped, as in TensorFlow), float32 `x` `[n, ...inner]`, int32 `segmentIds` `[n]` (or any
 * shape that is a prefix of x's), output `[numSegments, ...inner]`.
 *
 * Why: it is the gradient of `gather` (the embedding lookup). The wasm backend has no such kernel,
 * and the cpu backend's loops over every segment (O(numSegments x n x inner): 150,000 passes over
 * the batch at Qwen's vocabulary). This one is one pass over `x`, O(n x inner), with the output
 * zero-filled first. Registered when this module is imported (by `transformer.ts`); the native
 * TensorFlow backends keep their own kernel.
 */

interface SegmentSumArgs {
  inputs: { x: tf.TensorInfo; segmentIds: tf.TensorInfo }
  attrs: { numSegments: number }
}

function scatterAdd(x: ArrayLike<number>, ids: ArrayLike<number>, out: Float32Array, inner: number): void {
  out.fill(0)
  const segments = out.length / inner
  for (let i = 0; i < ids.length; i++) {
    const s = ids[i]!
    if (s < 0 || s >= segments) continue
    const from = i * inner
    const to = s * inner
    for (let k = 0; k < inner; k++) out[to + k]! += x[from + k]!
  }
}

function outputShape(args: SegmentSumArgs): { shape: number[]; inner: number } {
  const { x, segmentIds } = args.inputs
  const rest = x.shape.slice(segmentIds.shape.length)
  return { shape: [args.attrs.numSegments, ...rest], inner: rest.reduce((a, b) => a * b, 1) }
}

interface WasmBackend {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo
  typedArrayFromHeap(t: tf.TensorInfo): tf.TypedArray
}

interface CpuBackend {
  data: { get(id: tf.DataId): { values: tf.TypedArray } }
  makeTensorInfo(shape: number[], dtype: tf.DataType, values: tf.TypedArray): tf.TensorInfo
}

function wasmKernel(args: SegmentSumArgs & { backend: WasmBackend }): tf.TensorInfo {
  const { shape, inner } = outputShape(args)
  const out = args.backend.makeOutput(shape, 'float32')
  // views after the allocation: it may grow (and move) the heap
  const x = args.backend.typedArrayFromHeap(args.inputs.x)
  const ids = args.backend.typedArrayFromHeap(args.inputs.segmentIds)
  scatterAdd(x, ids, args.backend.typedArrayFromHeap(out) as Float32Array, inner)
  return out
}

function cpuKernel(args: SegmentSumArgs & { backend: CpuBackend }): tf.TensorInfo {
  const { shape, inner } = outputShape(args)
  const out = new Float32Array(shape.reduce((a, b) => a * b, 1))
  const x = args.backend.data.get(args.inputs.x.dataId).values
  const ids = args.backend.data.get(args.inputs.segmentIds.dataId).values
  scatterAdd(x, ids, out, inner)
  return args.backend.makeTensorInfo(shape, 'float32', out)
}

const kernels: [string, tf.KernelFunc][] = [
  ['wasm', wasmKernel as unknown as tf.KernelFunc], // cast: a kernel typed for its backend registered through tfjs' untyped KernelFunc
  ['cpu', cpuKernel as unknown as tf.KernelFunc], // cast: a kernel typed for its backend registered through tfjs' untyped KernelFunc
]
for (const [backendName, kernelFunc] of kernels) {
  if (tf.getKernel(tf.UnsortedSegmentSum, backendName))
    tf.unregisterKernel(tf.UnsortedSegmentSum, backendName)
  tf.registerKernel({ kernelName: tf.UnsortedSegmentSum, backendName, kernelFunc })
}
