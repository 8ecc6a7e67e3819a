import * as tf from '@tensorflow/tfjs'
import { InvariantError } from '../../protocols/index.ts'
import type { NativeBackend } from '../native-backend.ts'
import type { NativeKernel } from './native-kernel.ts'

const cpuBatchMatMul = tf.getKernel(tf.BatchMatMul, 'cpu')!.kernelFunc

/**
 * `BatchMatMul`: `out[..., m, n] = op(a)[..., m, k] op(b)[..., k, n]` in float32, with
 * `transposeA`/`transposeB` taken by the GEMM itself (no transposed copy) and the batch dims
 * broadcast when one side has a single matrix. Other broadcasts and non-float32 operands go to the
 * cpu backend's kernel.
 * @throws InvariantError when the inner sizes differ (tfjs's `matMul` checks them first).
 */
export const batchMatMulKernel: NativeKernel = {
  kernelName: tf.BatchMatMul,
  kernelFunc: (args) => {
    const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo }
    const { transposeA, transposeB } = (args.attrs ?? {}) as { transposeA?: boolean; transposeB?: boolean }
    const backend: NativeBackend = args.backend
    const av = backend.values(a)
    const bv = backend.values(b)
    const ra = a.shape.length
    const rb = b.shape.length
    const batchA = a.shape.slice(0, -2)
    const batchB = b.shape.slice(0, -2)
    const size = (s: number[]) => s.reduce((x, y) => x * y, 1)
    const na = size(batchA)
    const nb = size(batchB)
    const outBatch = tf.backend_util.assertAndGetBroadcastShape(batchA, batchB)
    const sameBatch = batchA.length === batchB.length && batchA.every((d, i) => d === batchB[i])
    if (
      !(av instanceof Float32Array) ||
      !(bv instanceof Float32Array) ||
      !(sameBatch || na === 1 || nb === 1)
    )
      return cpuBatchMatMul(args as unknown as Parameters<typeof cpuBatchMatMul>[0]) as tf.TensorInfo // cast: the cpu kernel takes the same args, typed by tfjs as its own
    const m = transposeA ? a.shape[ra - 1]! : a.shape[ra - 2]!
    const k = transposeA ? a.shape[ra - 2]! : a.shape[ra - 1]!
    const kb = transposeB ? b.shape[rb - 1]! : b.shape[rb - 2]!
    const n = transposeB ? b.shape[rb - 2]! : b.shape[rb - 1]!
    if (k !== kb)
      throw new InvariantError(
        `BatchMatMul: inner sizes differ: a [${a.shape}] and b [${b.shape}] (transposeA ${!!transposeA}, transposeB ${!!transposeB})`,
      )
    const batch = Math.max(na, nb)
    const out = backend.allocate('float32', batch * m * n) as Float32Array
    backend.addon.matmul(
      av,
      bv,
      out,
      batch,
      m,
      n,
      k,
      !!transposeA,
      !!transposeB,
      na === 1 ? 0 : m * k,
      nb === 1 ? 0 : k * n,
    )
    return backend.output(out, [...outBatch, m, n], 'float32')
  },
}
