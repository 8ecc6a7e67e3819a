import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend } from '../../gpu/index.ts'
import { loadNativeAddon } from '../../gpu/native-addon.ts'
import type { NativeBackend } from '../../gpu/native-backend.ts'
import { broadcastPlan } from '../../gpu/native-kernels/elementwise.ts'

const native = loadNativeAddon()

/** A tensor's result as read back: shape, dtype, values. */
interface Result {
  shape: number[]
  dtype: tf.DataType
  values: tf.TypedArray
}

/** Deterministic uniform numbers in [0, 1) (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const SPECIALS = [Number.NaN, Infinity, -Infinity, 0, -0, 1e-42, -1e-42, 3e38, -3e38, 1, -1, 0.5, -0.5]

/** `n` float32 values in [lo, hi), with a sprinkling of NaN, +-Inf, +-0, denormals and huge values. */
function floats(n: number, seed: number, lo = -4, hi = 4, specials = true): Float32Array {
  const r = rng(seed)
  const out = new Float32Array(n)
  for (let i = 0; i < n; i++) {
    const u = r()
    out[i] = specials && u < 0.08 ? SPECIALS[Math.floor(r() * SPECIALS.length)]! : lo + (hi - lo) * r()
  }
  return out
}

/** `n` int32 values: small ones (so that ties happen) and extremes (so that results wrap). */
function ints(n: number, seed: number): Int32Array {
  const r = rng(seed)
  const extremes = [2147483647, -2147483648, 1 << 30, -(1 << 30), 46341, -46341, 0, 1, -1]
  const out = new Int32Array(n)
  for (let i = 0; i < n; i++)
    out[i] = r() < 0.2 ? extremes[Math.floor(r() * extremes.length)]! : Math.floor(r() * 21) - 10
  return out
}

/** `n` bools (0/1). */
function bools(n: number, seed: number): Uint8Array {
  const r = rng(seed)
  return Uint8Array.from({ length: n }, () => (r() < 0.5 ? 1 : 0))
}

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1)

/** Runs `make` on the native backend, then on cpu; both results. */
async function onBoth(make: () => tf.Tensor): Promise<{ native: Result; cpu: Result }> {
  const read = (): Result => {
    const t = make()
    const r = { shape: t.shape, dtype: t.dtype, values: t.dataSync() as tf.TypedArray }
    t.dispose()
    return r
  }
  const n = read()
  await tf.setBackend('cpu')
  try {
    return { native: n, cpu: read() }
  } finally {
    await tf.setBackend('native')
  }
}

/** Distance in float32 ulps (0 for equal values, +-0 apart by 1, Infinity when one is NaN). */
function ulps(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : Infinity
  const f = new Float32Array([a, b])
  const i = new Int32Array(f.buffer)
  const ordered = (x: number) => (x < 0 ? -2147483648 - x : x)
  return Math.abs(ordered(i[0]!) - ordered(i[1]!))
}

/**
 * Asserts the native result is the cpu backend's: same shape, dtype, storage type and values;
 * float32 values within `tolerance` ulps (0: the same bits but for NaN payloads; +0 and -0 differ).
 */
function assertSame(r: { native: Result; cpu: Result }, what: string, tolerance = 0): void {
  assert.deepEqual(r.native.shape, r.cpu.shape, `${what}: shape`)
  assert.equal(r.native.dtype, r.cpu.dtype, `${what}: dtype`)
  assert.equal(r.native.values.constructor.name, r.cpu.values.constructor.name, `${what}: storage`)
  assert.equal(r.native.values.length, r.cpu.values.length, `${what}: length`)
  for (let i = 0; i < r.cpu.values.length; i++) {
    const a = r.native.values[i]!
    const b = r.cpu.values[i]!
    const d = r.cpu.dtype === 'float32' ? ulps(a, b) : Object.is(a, b) ? 0 : Infinity
    if (d > tolerance)
      assert.fail(
        `${what}: element ${i} is ${Object.is(a, -0) ? '-0' : a} natively, ${Object.is(b, -0) ? '-0' : b} on cpu`,
      )
  }
}

/** Counts the addon's calls by function while it runs on the native backend. */
const calls: Record<string, number> = {}

function nativeCalls(name: string): number {
  return calls[name] ?? 0
}

const BINARY_SHAPES: [number[], number[], string][] = [
  [[5, 7], [5, 7], 'same shape'],
  [[5, 7], [], 'scalar b'],
  [[], [5, 7], 'scalar a'],
  [[], [], 'both scalars'],
  [[6, 33], [33], 'row vector'],
  [[33], [6, 33], 'row vector a'],
  [[6, 33], [6, 1], 'column'],
  [[6, 1], [6, 33], 'column a'],
  [[3, 1], [1, 4], 'outer'],
  [[1, 4, 5], [3, 4, 5], 'leading dim'],
  [[2, 1, 4, 1, 3], [1, 5, 1, 6, 1], 'rank 5 strided'],
  [[2, 3, 1, 2, 1, 3], [3, 1, 2, 5, 1], 'rank 6'],
  [[1], [1, 1], 'ones'],
  [[0, 3], [3], 'empty'],
  [[2, 0], [2, 1], 'empty inner'],
  [[300, 200], [200], 'large row (threads)'],
  [[300, 200], [300, 1], 'large column (threads)'],
]

const FLOAT_BINARY: [string, (a: tf.Tensor, b: tf.Tensor) => tf.Tensor][] = [
  ['Add', tf.add],
  ['Sub', tf.sub],
  ['Multiply', tf.mul],
  ['RealDiv', tf.div],
  ['Maximum', tf.maximum],
  ['Minimum', tf.minimum],
  ['SquaredDifference', tf.squaredDifference],
  ['Equal', tf.equal],
  ['NotEqual', tf.notEqual],
  ['Greater', tf.greater],
  ['GreaterEqual', tf.greaterEqual],
  ['Less', tf.less],
  ['LessEqual', tf.lessEqual],
]

describe('native elementwise', {
  skip: native.addon ? false : `native engine not built: ${native.reason}`,
}, () => {
  let threads = 1
  const wrapped: Record<string, unknown> = {}

  before(async () => {
    await chooseBackend({ backend: 'native', log: () => {} })
    const addon = (tf.backend() as NativeBackend).addon as unknown as Record<
      string,
      (...a: unknown[]) => unknown
    >
    for (const name of ['binary', 'unary', 'cast', 'select', 'addN']) {
      const fn = addon[name]!
      wrapped[name] = fn
      addon[name] = (...a: unknown[]) => {
        calls[name] = (calls[name] ?? 0) + 1
        return fn(...a)
      }
    }
    threads = native.addon!.info().threads
    native.addon!.setThreads(2) // the loops above the thresholds run split
  })

  after(() => {
    const addon = native.addon as unknown as Record<string, unknown>
    for (const [name, fn] of Object.entries(wrapped)) addon[name] = fn
    native.addon!.setThreads(threads)
  })

  it('native elementwise - reduces broadcasts to the fewest dims', () => {
    const plan = (a: number[], b: number[]) => Array.from(broadcastPlan(a, b)!.plan)
    assert.deepEqual(plan([4, 5, 6], [4, 5, 6]), [1, 120, 1, 1])
    assert.deepEqual(plan([4, 5, 6], []), [1, 120, 1, 0])
    assert.deepEqual(plan([1024, 128], [128]), [2, 1024, 128, 128, 1, 0, 1])
    assert.deepEqual(plan([1024, 128], [1024, 1]), [2, 1024, 128, 128, 1, 1, 0])
    assert.deepEqual(plan([2, 3, 4, 5], [4, 5]), [2, 6, 20, 20, 1, 0, 1])
    assert.deepEqual(plan([2, 3, 4, 5], [2, 3, 1, 1]), [2, 6, 20, 20, 1, 1, 0])
    assert.deepEqual(plan([1, 1], [1]), [1, 1, 0, 0])
    assert.deepEqual(broadcastPlan([0, 3], [3])!.size, 0)
    assert.throws(() => broadcastPlan([2, 3], [4]), /broadcast/)
  })

  for (const [name, op] of FLOAT_BINARY)
    it(`native elementwise - ${name} on float32 matches the cpu backend for every broadcast`, async () => {
      const before = nativeCalls('binary')
      let seed = 1
      for (const [sa, sb, what] of BINARY_SHAPES) {
        // small integers among the values, so that comparisons see ties
        const av = floats(size(sa), seed++).map((v, i) => (i % 5 === 0 ? Math.round(v) : v))
        const bv = floats(size(sb), seed++).map((v, i) => (i % 3 === 0 ? Math.round(v) : v))
        assertSame(await onBoth(() => op(tf.tensor(av, sa), tf.tensor(bv, sb))), `${name} ${what}`)
      }
      const nonEmpty = BINARY_SHAPES.filter(([a, b]) => size(a) * size(b) > 0).length
      assert.equal(nativeCalls('binary') - before, nonEmpty, 'every non-empty case ran in native code')
    })

  it('native elementwise - Pow on float32 matches the cpu backend (within 1 ulp) with its special cases', async () => {
    const base = floats(600, 7, 0, 5)
    const exponent = floats(600, 8, -3, 3)
    assertSame(await onBoth(() => tf.pow(tf.tensor(base, [20, 30]), tf.tensor(exponent, [20, 30]))), 'pow', 1)
    assertSame(await onBoth(() => tf.pow(tf.tensor(base, [20, 30]), tf.scalar(1.5))), 'pow scalar', 1)
    // negative bases with integer exponents, and Math.pow's NaN for 1 ** Inf and x ** NaN
    const a = [-2, -2, -3, 1, -1, 1, Number.NaN, 0, -0, 0, Infinity, -Infinity]
    const b = [2, 3, -1, Infinity, -Infinity, Number.NaN, 0, -1, -1, 0, -0.5, 3]
    assertSame(await onBoth(() => tf.pow(tf.tensor(a), tf.tensor(b))), 'pow specials')
    assertSame(
      await onBoth(() => tf.pow(tf.tensor(base, [2, 3, 1, 100]), tf.tensor([2, -1, 0.5], [3, 1]))),
      'pow bcast',
      1,
    )
  })

  it('native elementwise - propagates NaN and Infinity as JavaScript does', async () => {
    const a = [Number.NaN, 1, Number.NaN, Infinity, -Infinity, Infinity, 0, -0, 0, -0]
    const b = [1, Number.NaN, Number.NaN, -Infinity, -Infinity, 1, -0, 0, 0, -0]
    for (const [name, op] of FLOAT_BINARY)
      assertSame(await onBoth(() => op(tf.tensor(a), tf.tensor(b))), `${name} specials`)
    const r = await onBoth(() => tf.maximum(tf.tensor([0, -0, Number.NaN]), tf.tensor([-0, -0, 5])))
    assert.ok(
      Object.is(r.native.values[0], 0) &&
        Object.is(r.native.values[1], -0) &&
        Number.isNaN(r.native.values[2]),
    )
  })

  it('native elementwise - int32 Add, Sub, Multiply, Maximum, Minimum and comparisons wrap and compare like the cpu backend', async () => {
    const ops: [string, (a: tf.Tensor, b: tf.Tensor) => tf.Tensor][] = [
      ['Add', tf.add],
      ['Sub', tf.sub],
      ['Multiply', tf.mul],
      ['Maximum', tf.maximum],
      ['Minimum', tf.minimum],
      ...FLOAT_BINARY.filter(([n]) => /Equal|Greater|Less/.test(n)),
    ]
    const before = nativeCalls('binary')
    let seed = 100
    let cases = 0
    for (const [name, op] of ops)
      for (const [sa, sb, what] of BINARY_SHAPES) {
        const av = ints(size(sa), seed++)
        const bv = ints(size(sb), seed++)
        assertSame(
          await onBoth(() => op(tf.tensor(av, sa, 'int32'), tf.tensor(bv, sb, 'int32'))),
          `int32 ${name} ${what}`,
        )
        if (size(sa) * size(sb) > 0) cases++
      }
    assert.equal(nativeCalls('binary') - before, cases)
  })

  it('native elementwise - int32 RealDiv, SquaredDifference and Pow go to the cpu kernels', async () => {
    const a = tf.tensor([7, -7, 2147483647, 5], [4], 'int32')
    const b = tf.tensor([2, 2, -1, 0], [4], 'int32')
    const before = nativeCalls('binary')
    for (const name of [tf.RealDiv, tf.SquaredDifference, tf.Pow]) {
      const run = () => tf.engine().runKernel(name, { a, b }) as tf.TensorInfo
      const n = tf.engine().makeTensorFromTensorInfo(run())
      const nv = n.dataSync()
      await tf.setBackend('cpu')
      const c = tf.engine().makeTensorFromTensorInfo(run())
      assert.deepEqual(Array.from(nv), Array.from(c.dataSync()), name)
      await tf.setBackend('native')
    }
    assert.equal(nativeCalls('binary'), before)
  })

  it('native elementwise - mixed dtypes and float32 tensors on non-Float32Array storage go to the cpu kernel', async () => {
    const backend = tf.backend() as NativeBackend
    const before = nativeCalls('binary')
    const f = tf.tensor([1.5, 2.5, 3.5])
    const i = tf.tensor([1, 2, 3], [3], 'int32')
    const mixed = tf
      .engine()
      .makeTensorFromTensorInfo(tf.engine().runKernel(tf.Add, { a: f, b: i }) as tf.TensorInfo)
    assert.deepEqual(Array.from(mixed.dataSync()), [2.5, 4.5, 6.5])
    const relabeled = tf
      .engine()
      .makeTensorFromTensorInfo(backend.output(Int32Array.from([1, 2, 3]), [3], 'float32'))
    assert.deepEqual(Array.from(tf.mul(relabeled, tf.scalar(0.5)).dataSync()), [0.5, 1, 1.5])
    assert.equal(nativeCalls('binary'), before)
  })

  it('native elementwise - bool comparisons and LogicalAnd/LogicalOr/LogicalNot', async () => {
    let seed = 300
    for (const [sa, sb, what] of BINARY_SHAPES) {
      const av = bools(size(sa), seed++)
      const bv = bools(size(sb), seed++)
      const A = () => tf.tensor(av, sa, 'bool')
      const B = () => tf.tensor(bv, sb, 'bool')
      assertSame(await onBoth(() => tf.logicalAnd(A(), B())), `LogicalAnd ${what}`)
      assertSame(await onBoth(() => tf.logicalOr(A(), B())), `LogicalOr ${what}`)
      assertSame(await onBoth(() => tf.equal(A(), B())), `Equal bool ${what}`)
      assertSame(await onBoth(() => tf.greater(A(), B())), `Greater bool ${what}`)
      assertSame(await onBoth(() => tf.logicalNot(A())), `LogicalNot ${what}`)
    }
    const r = await onBoth(() => tf.less(tf.tensor([1, 2]), tf.tensor([2, 2])))
    assert.equal(r.native.dtype, 'bool')
    assert.ok(r.native.values instanceof Uint8Array)
    assert.deepEqual(Array.from(r.native.values), [1, 0])
  })

  const UNARY_SHAPES: number[][] = [[], [0], [7], [3, 5, 129], [2, 3, 1, 4, 5], [40000]]

  /** [name, op, input range, ulp tolerance]: exact ops 0, transcendental ones 1 (computed in double). */
  const UNARY: [string, (x: tf.Tensor) => tf.Tensor, [number, number], number][] = [
    ['Exp', tf.exp, [-110, 100], 1],
    ['Log', tf.log, [-1, 1e6], 1],
    ['Sigmoid', tf.sigmoid, [-120, 120], 1],
    ['Sqrt', tf.sqrt, [-1, 1e4], 0],
    ['Rsqrt', tf.rsqrt, [-1, 1e4], 0],
    ['Square', tf.square, [-1e20, 1e20], 0],
    ['Neg', tf.neg, [-10, 10], 0],
    ['Abs', tf.abs, [-10, 10], 0],
    ['Relu', tf.relu, [-10, 10], 0],
    ['Relu6', tf.relu6, [-10, 10], 0],
    ['Tanh', tf.tanh, [-12, 12], 1],
    ['Softplus', tf.softplus, [-30, 30], 1],
    ['Reciprocal', tf.reciprocal, [-10, 10], 0],
    ['Log1p', tf.log1p, [-1.5, 100], 1],
    ['Expm1', tf.expm1, [-50, 100], 1],
    ['Step', (x) => tf.step(x, 0.3), [-5, 5], 0],
    ['Floor', tf.floor, [-1e8, 1e8], 0],
    ['Floor small', tf.floor, [-3, 3], 0],
    ['Ceil', tf.ceil, [-3, 3], 0],
    ['Round', tf.round, [-4, 4], 0],
    ['Sign', tf.sign, [-3, 3], 0],
    ['LeakyRelu', (x) => tf.leakyRelu(x, 0.1), [-10, 10], 0],
    ['ClipByValue', (x) => tf.clipByValue(x, -0.1, 0.7), [-1, 1], 0],
    ['Elu', tf.elu, [-20, 5], 1],
    ['IsNan', tf.isNaN, [-1, 1], 0],
    ['IsFinite', tf.isFinite, [-1, 1], 0],
    ['IsInf', tf.isInf, [-1, 1], 0],
  ]

  for (const [name, op, [lo, hi], tolerance] of UNARY)
    it(`native elementwise - ${name} on float32 matches the cpu backend${tolerance ? ' (within 1 ulp)' : ''}`, async () => {
      const before = nativeCalls('unary')
      let seed = 500
      let offBy1 = 0
      let total = 0
      for (const shape of UNARY_SHAPES) {
        const xv = floats(size(shape), seed++, lo, hi)
        const r = await onBoth(() => op(tf.tensor(xv, shape)))
        assertSame(r, `${name} [${shape}]`, tolerance)
        if (r.cpu.dtype === 'float32')
          for (let i = 0; i < r.cpu.values.length; i++)
            if (!Object.is(r.cpu.values[i], r.native.values[i])) offBy1++
        total += r.cpu.values.length
      }
      // the doubles round to the cpu backend's float32 but for rare near-ties
      assert.ok(offBy1 <= total * 1e-4, `${name}: ${offBy1} of ${total} values 1 ulp off`)
      assert.equal(nativeCalls('unary') - before, UNARY_SHAPES.filter((s) => size(s) > 0).length)
    })

  it('native elementwise - rounding ties and signed zeros of Round, Floor, Ceil, Sign', async () => {
    const x = [
      -2.5,
      -1.5,
      -0.5,
      -0,
      0,
      0.5,
      1.5,
      2.5,
      -0.7,
      -0.3,
      0.3,
      0.7,
      8388609,
      -8388609,
      Number.NaN,
      Infinity,
    ]
    for (const [name, op] of [
      ['Round', tf.round],
      ['Floor', tf.floor],
      ['Ceil', tf.ceil],
      ['Sign', tf.sign],
      ['Relu', tf.relu],
      ['Neg', tf.neg],
    ] as const)
      assertSame(await onBoth(() => op(tf.tensor(x))), name)
  })

  it('native elementwise - int32 unary ops go to the cpu kernels', async () => {
    const before = nativeCalls('unary')
    for (const op of [tf.neg, tf.abs, tf.square, tf.exp])
      assertSame(await onBoth(() => op(tf.tensor([3, -4, 2147483647], [3], 'int32'))), op.name)
    assert.equal(nativeCalls('unary'), before)
  })

  it('native elementwise - Cast between float32, int32 and bool', async () => {
    const f = new Float32Array([
      1.7,
      -1.7,
      2.5,
      -2.5,
      Number.NaN,
      Infinity,
      -Infinity,
      0,
      -0,
      3e9,
      -3e9,
      2147483648,
      -2147483648,
      1e20,
      -1e20,
      16777216,
      0.2,
    ])
    const i = new Int32Array([0, 1, -1, 16777215, -16777215, 7, 2147483647 & 0xffffff])
    const b = new Uint8Array([0, 1, 1, 0])
    const before = nativeCalls('cast')
    assertSame(await onBoth(() => tf.cast(tf.tensor(f), 'int32')), 'float32 -> int32')
    assertSame(await onBoth(() => tf.cast(tf.tensor(f), 'bool')), 'float32 -> bool')
    assertSame(await onBoth(() => tf.cast(tf.tensor(i, [7], 'int32'), 'bool')), 'int32 -> bool')
    for (const [x, dtype, what] of [
      [i, 'int32', 'int32 -> float32'],
      [b, 'bool', 'bool -> float32'],
    ] as const) {
      // the cpu backend relabels the array (an Int32Array/Uint8Array under float32); native stores a Float32Array
      const r = await onBoth(() => tf.cast(tf.tensor(x, [x.length], dtype), 'float32'))
      assert.ok(r.native.values instanceof Float32Array, what)
      assert.deepEqual(Array.from(r.native.values), Array.from(r.cpu.values), what)
    }
    const r = await onBoth(() => tf.cast(tf.tensor(b, [4], 'bool'), 'int32'))
    assert.ok(r.native.values instanceof Int32Array)
    assert.deepEqual(Array.from(r.native.values), Array.from(r.cpu.values))
    assert.equal(nativeCalls('cast') - before, 6)
    const big = await onBoth(() => tf.cast(tf.tensor([16777217], [1], 'int32'), 'float32'))
    assert.equal(big.native.values[0], 16777216, 'an int32 above 2^24 rounds to the nearest float32')
    assertSame(
      await onBoth(() => tf.cast(tf.tensor(floats(50000, 9, -1e10, 1e10)), 'int32')),
      'large float32 -> int32',
    )
  })

  it('native elementwise - Select (tf.where) for float32, int32 and bool, with broadcasting done by tf.where', async () => {
    const before = nativeCalls('select')
    for (const shape of [[], [0], [9], [4, 33], [2, 3, 1, 4, 5], [50000]]) {
      const n = size(shape)
      const c = bools(n, n + 1)
      assertSame(
        await onBoth(() =>
          tf.where(
            tf.tensor(c, shape, 'bool'),
            tf.tensor(floats(n, 1), shape),
            tf.tensor(floats(n, 2), shape),
          ),
        ),
        `where float32 [${shape}]`,
      )
      assertSame(
        await onBoth(() =>
          tf.where(
            tf.tensor(c, shape, 'bool'),
            tf.tensor(ints(n, 3), shape, 'int32'),
            tf.tensor(ints(n, 4), shape, 'int32'),
          ),
        ),
        `where int32 [${shape}]`,
      )
      assertSame(
        await onBoth(() =>
          tf.where(
            tf.tensor(c, shape, 'bool'),
            tf.tensor(bools(n, 5), shape, 'bool'),
            tf.tensor(bools(n, 6), shape, 'bool'),
          ),
        ),
        `where bool [${shape}]`,
      )
    }
    assert.equal(nativeCalls('select') - before, 3 * 5)
    assertSame(
      await onBoth(() =>
        tf.where(tf.tensor(bools(4, 7), [4, 1], 'bool'), tf.tensor(floats(12, 8), [4, 3]), tf.scalar(-1)),
      ),
      'where broadcast',
    )
  })

  it('native elementwise - AddN sums in order like the cpu backend', async () => {
    const before = nativeCalls('addN')
    for (const count of [1, 2, 5]) {
      for (const shape of [[], [0], [7, 3], [2, 3, 1, 4, 5], [70000]]) {
        const n = size(shape)
        const xs = Array.from({ length: count }, (_, k) => floats(n, 40 + k, -1e3, 1e3))
        assertSame(
          await onBoth(() => tf.addN(xs.map((x) => tf.tensor(x, shape)))),
          `addN ${count} [${shape}]`,
        )
        const is = Array.from({ length: count }, (_, k) => ints(n, 60 + k))
        assertSame(
          await onBoth(() => tf.addN(is.map((x) => tf.tensor(x, shape, 'int32')))),
          `addN int32 ${count} [${shape}]`,
        )
      }
    }
    assert.equal(nativeCalls('addN') - before, 3 * 4 * 2)
  })

  it('native elementwise - gradients through the native kernels match the cpu backend', async () => {
    const xv = floats(24, 11, -3, 3, false)
    const wv = floats(6, 12, -1, 1, false)
    const f = () => {
      const x = tf.tensor(xv, [4, 6])
      const w = tf.tensor(wv, [6])
      return tf.grad((xx: tf.Tensor) =>
        tf.sum(tf.mul(tf.sigmoid(tf.mul(xx, w)), tf.rsqrt(tf.add(tf.square(xx), 1e-3)))),
      )(x)
    }
    assertSame(await onBoth(f), 'grad', 1)
  })
})
