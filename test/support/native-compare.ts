import assert from 'node:assert/strict'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend, createRng } from '../../gpu/index.ts'

/**
 * Helpers of the native-kernel tests: run one computation on the `native` backend and on the tfjs
 * `cpu` backend from the same plain inputs, and compare what they give.
 */

/** Whether the `native` backend loads here (the addon is built); tests skip without it. */
export const nativeAvailable: boolean = await chooseBackend({ backend: 'native', log: () => {} }).then(
  () => true,
  () => false,
)

/** A tensor's result as plain data. */
export interface Result {
  shape: number[]
  dtype: tf.DataType
  values: number[]
}

/** An input built afresh on each backend: values (row-major), shape, dtype. */
export interface Input {
  values: ArrayLike<number>
  shape: number[]
  dtype?: 'float32' | 'int32'
}

/** `n` values from a seeded generator: uniform in [-1, 1) (float32), or integers in [lo, hi) (int32). */
export function randomValues(n: number, seed: number, int?: [number, number]): number[] {
  const rng = createRng(seed)
  return Array.from({ length: n }, () => (int ? int[0] + rng.int(int[1] - int[0]) : rng.next() * 2 - 1))
}

/** A float32 (or int32 with `int`) input of `shape` with seeded random values. */
export function randomInput(shape: number[], seed: number, int?: [number, number]): Input {
  return {
    values: randomValues(
      shape.reduce((a, b) => a * b, 1),
      seed,
      int,
    ),
    shape,
    dtype: int ? 'int32' : 'float32',
  }
}

async function runOn(
  backend: 'native' | 'cpu',
  inputs: Input[],
  f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
) {
  await tf.setBackend(backend)
  return tf.tidy(() => {
    const xs = inputs.map((i) => tf.tensor(Array.from(i.values), i.shape, i.dtype ?? 'float32'))
    const out = f(...xs)
    return (Array.isArray(out) ? out : [out]).map((t) => ({
      shape: t.shape,
      dtype: t.dtype,
      values: Array.from(t.dataSync() as ArrayLike<number>),
    }))
  })
}

/** `f` of the inputs on `native` and on `cpu` (leaves `native` active). */
export async function onBoth(
  inputs: Input[],
  f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
): Promise<{ native: Result[]; cpu: Result[] }> {
  const cpu = await runOn('cpu', inputs, f)
  const native = await runOn('native', inputs, f)
  return { native, cpu }
}

/**
 * Asserts equal shapes and dtypes and values within `atol + rtol |cpu|` (0 and 0: identical, NaN
 * matching NaN).
 */
export function assertSame(got: Result[], want: Result[], rtol = 0, atol = 0, what = ''): void {
  assert.equal(got.length, want.length, `${what}: number of outputs`)
  for (let k = 0; k < want.length; k++) {
    const g = got[k]!
    const w = want[k]!
    assert.deepEqual(g.shape, w.shape, `${what}: shape of output ${k}`)
    assert.equal(g.dtype, w.dtype, `${what}: dtype of output ${k}`)
    assert.equal(g.values.length, w.values.length)
    for (let i = 0; i < w.values.length; i++) {
      const a = g.values[i]!
      const b = w.values[i]!
      if (Number.isNaN(b) || Number.isNaN(a)) {
        assert.ok(Number.isNaN(a) && Number.isNaN(b), `${what}: output ${k}[${i}]: ${a} vs ${b}`)
        continue
      }
      if (a === b) continue
      assert.ok(
        Math.abs(a - b) <= atol + rtol * Math.abs(b),
        `${what}: output ${k}[${i}]: native ${a}, cpu ${b}`,
      )
    }
  }
}

/** `f` on both backends, compared by `assertSame`. */
export async function assertNativeMatchesCpu(
  what: string,
  inputs: Input[],
  f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
  rtol = 0,
  atol = 0,
): Promise<void> {
  const { native, cpu } = await onBoth(inputs, f)
  assertSame(native, cpu, rtol, atol, what)
}

/** Whether the `native` backend runs kernel `name` with `kernelFunc` (not a cpu copy). */
export function nativeRuns(name: string, kernelFunc: unknown): boolean {
  return tf.getKernel(name, 'native')?.kernelFunc === kernelFunc
}
