import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { loadNativeAddon } from '../../gpu/native-addon.ts'
import { nativeAvailable, randomValues } from '../support/native-compare.ts'

const skip = nativeAvailable ? false : 'the native addon is not built'
const addon = loadNativeAddon().addon

/**
 * C[i] = op(A[i]) op(B[i]) in float64 from the stored layouts: A `[m, k]` (`[k, m]` when transA),
 * B `[k, n]` (`[n, k]` when transB), batch strides in elements (0 broadcasts one matrix).
 */
function reference(
  a: Float32Array,
  b: Float32Array,
  batch: number,
  m: number,
  n: number,
  k: number,
  ta: boolean,
  tb: boolean,
  sa: number,
  sb: number,
): Float64Array {
  const c = new Float64Array(batch * m * n)
  for (let q = 0; q < batch; q++)
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0
        for (let p = 0; p < k; p++) {
          const av = a[q * sa + (ta ? p * m + i : i * k + p)]!
          const bv = b[q * sb + (tb ? j * k + p : p * n + j)]!
          s += av * bv
        }
        c[q * m * n + i * n + j] = s
      }
  return c
}

/** max |got - want| / (1 + |want|) over the entries. */
function maxRelError(got: Float32Array, want: Float64Array): number {
  let e = 0
  for (let i = 0; i < want.length; i++)
    e = Math.max(e, Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!)))
  return e
}

// [batch, m, n, k, broadcast]: generation's few rows (row streaming, dot products), sizes across
// the 16-row line of `auto`, odd edges of the microkernel's 12 x 32 tiles, a K past one 256 block,
// many small products (one per task), and one side broadcast over the batch.
const SHAPES: [number, number, number, number, 'none' | 'a' | 'b'][] = [
  [1, 1, 70, 33, 'none'],
  [1, 4, 45, 19, 'none'],
  [1, 16, 64, 40, 'none'],
  [1, 17, 33, 65, 'none'],
  [1, 63, 63, 32, 'none'],
  [1, 130, 97, 300, 'none'],
  [6, 13, 7, 9, 'none'],
  [3, 40, 50, 20, 'b'],
  [3, 40, 50, 20, 'a'],
]

describe('native matmul (own GEMM, BLAS, auto)', { skip }, () => {
  after(() => addon?.setGemm('auto'))

  const impls = ['own', 'auto', ...(addon?.info().blas ? ['blas' as const] : [])] as const
  for (const impl of impls)
    it(`native matmul - ${impl}: every transpose pair, batch and broadcast against a float64 reference`, () => {
      addon!.setGemm(impl)
      assert.equal(addon!.info().gemm, impl)
      let seed = 1
      for (const [batch, m, n, k, broadcast] of SHAPES)
        for (const ta of [false, true])
          for (const tb of [false, true]) {
            const sa = broadcast === 'a' ? 0 : m * k
            const sb = broadcast === 'b' ? 0 : k * n
            const a = Float32Array.from(randomValues((broadcast === 'a' ? 1 : batch) * m * k, seed++))
            const b = Float32Array.from(randomValues((broadcast === 'b' ? 1 : batch) * k * n, seed++))
            const c = new Float32Array(batch * m * n).fill(Number.NaN) // every entry must be written
            addon!.matmul(a, b, c, batch, m, n, k, ta, tb, sa, sb)
            const err = maxRelError(c, reference(a, b, batch, m, n, k, ta, tb, sa, sb))
            assert.ok(
              err < 1e-5,
              `${impl} [${batch}] ${m}x${n}x${k} ta ${ta} tb ${tb} ${broadcast}: error ${err}`,
            )
          }
    })

  it('native matmul - the auto GEMM is the default and the kernel takes transposes without copies', async () => {
    addon!.setGemm('auto')
    await tf.setBackend('native')
    const a = tf.tensor(randomValues(2 * 5 * 3, 3), [2, 5, 3])
    const b = tf.tensor(randomValues(2 * 4 * 3, 4), [2, 4, 3])
    const y = tf.matMul(a, b, false, true)
    const want = reference(
      a.dataSync() as Float32Array,
      b.dataSync() as Float32Array,
      2,
      5,
      4,
      3,
      false,
      true,
      15,
      12,
    )
    assert.deepEqual(y.shape, [2, 5, 4])
    assert.ok(maxRelError(y.dataSync() as Float32Array, want) < 1e-6)
    tf.dispose([a, b, y])
  })

  it('native matmul - bad input: an unknown GEMM, inner sizes that differ, arrays too short', async () => {
    assert.throws(() => addon!.setGemm('mkl' as 'own'), /gemm: expected 'own', 'blas' or 'auto', got 'mkl'/)
    await tf.setBackend('native')
    const a = tf.zeros([2, 3])
    const b = tf.zeros([4, 2])
    assert.throws(() => tf.matMul(a, b), /inner/i)
    tf.dispose([a, b])
    assert.throws(
      () =>
        addon!.matmul(
          new Float32Array(5),
          new Float32Array(6),
          new Float32Array(4),
          1,
          2,
          2,
          3,
          false,
          false,
          6,
          6,
        ),
      { name: 'TypeError', message: 'a: expected at least 6 elements, got 5' },
    )
  })
})
