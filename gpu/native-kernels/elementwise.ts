import * as tf from '@tensorflow/tfjs'
import { InvariantError } from '../../protocols/index.ts'
import type { NativeArray } from '../native-addon.ts'
import type { NativeBackend } from '../native-backend.ts'
import type { NativeKernel } from './native-kernel.ts'

/**
 * The elementwise kernels of the native engine (`native/src/elementwise-*.cc`): binary ops with
 * numpy/tfjs broadcasting, unary math, Cast, Select and AddN. Each computes what the tfjs cpu
 * backend's JavaScript computes (double arithmetic, one rounding to float32 on store; int32 results
 * wrap like an Int32Array store), so the two backends agree to the bit but for values within ~1e-15
 * of a float32 rounding boundary. Operands the native code has no form for (complex64, string,
 * mixed dtypes, int32 where JavaScript's double arithmetic is not exact in int32, a float32 tensor
 * whose storage is not a Float32Array) go to the cpu backend's kernel.
 */

type KernelArgs = Parameters<NativeKernel['kernelFunc']>[0]
type KernelResult = ReturnType<NativeKernel['kernelFunc']>

/** The cpu backend's kernel `name`, the fallback of a native one. @throws InvariantError when it has none. */
function cpuKernel(name: string): (args: KernelArgs) => KernelResult {
  const kernel = tf.getKernel(name, 'cpu')
  if (!kernel) throw new InvariantError(`native elementwise: the cpu backend has no kernel ${name}`)
  return kernel.kernelFunc as unknown as (args: KernelArgs) => KernelResult // cast: the cpu backend's kernel takes these args; tfjs types it for any backend
}

/** The storage of `t` when it is the typed array its dtype stores in (float32, int32, bool), else undefined. */
function stored(backend: NativeBackend, t: tf.TensorInfo): NativeArray | undefined {
  const v = backend.values(t) as unknown
  if (t.dtype === 'float32') return v instanceof Float32Array ? v : undefined
  if (t.dtype === 'int32') return v instanceof Int32Array ? v : undefined
  if (t.dtype === 'bool') return v instanceof Uint8Array ? v : undefined
  return undefined
}

/** A zeroed array of `n` elements of `dtype` as the cpu backend stores it (bool in a Uint8Array). */
function allocate(backend: NativeBackend, dtype: 'float32' | 'int32' | 'bool', n: number): NativeArray {
  if (dtype === 'bool') return new Uint8Array(n)
  return backend.allocate(dtype, n)
}

/** Dims of a broadcast walk the addon takes (after merging; tfjs tensors have far fewer). */
const MAX_PLAN_RANK = 16

/** `broadcastPlan`'s result. */
export interface BroadcastPlan {
  /** The output's shape (numpy broadcasting of the two input shapes). */
  shape: number[]
  /** The output's element count. */
  size: number
  /**
   * The walk the addon's `binary` takes: `[rank, dims..., strides of a..., strides of b...]`,
   * outermost dim first, size-1 dims dropped and neighbours merged where both operands stay
   * contiguous across them; a stride is 0 where that operand is broadcast. Empty when size is 0.
   */
  plan: Int32Array
}

/**
 * The broadcast of two shapes (any ranks) reduced to the fewest dims: same shapes give one dim,
 * a scalar side one dim with stride 0, a row vector `[n]` against `[m, n]` two dims.
 * @returns undefined when the walk needs more than 16 dims or an extent does not fit an int32.
 * @throws Error (tfjs's message) when the shapes do not broadcast.
 */
export function broadcastPlan(
  aShape: readonly number[],
  bShape: readonly number[],
): BroadcastPlan | undefined {
  const shape = tf.backend_util.assertAndGetBroadcastShape(aShape as number[], bShape as number[])
  const size = tf.util.sizeFromShape(shape)
  if (size === 0) return { shape, size, plan: new Int32Array(0) }
  if (size > 0x7fffffff) return undefined
  const rank = shape.length
  // innermost first while walking; reversed at the end
  const dims: number[] = []
  const sa: number[] = []
  const sb: number[] = []
  let runA = 1
  let runB = 1
  for (let d = rank - 1; d >= 0; d--) {
    const n = shape[d]!
    const da = d - (rank - aShape.length) >= 0 ? aShape[d - (rank - aShape.length)]! : 1
    const db = d - (rank - bShape.length) >= 0 ? bShape[d - (rank - bShape.length)]! : 1
    const strideA = da === 1 ? 0 : runA
    const strideB = db === 1 ? 0 : runB
    runA *= da
    runB *= db
    if (n === 1) continue
    const last = dims.length - 1
    if (last >= 0 && strideA === sa[last]! * dims[last]! && strideB === sb[last]! * dims[last]!) {
      dims[last]! *= n
      continue
    }
    dims.push(n)
    sa.push(strideA)
    sb.push(strideB)
  }
  if (dims.length === 0) {
    dims.push(1)
    sa.push(0)
    sb.push(0)
  }
  const r = dims.length
  if (r > MAX_PLAN_RANK) return undefined
  const plan = new Int32Array(1 + 3 * r)
  plan[0] = r
  for (let i = 0; i < r; i++) {
    plan[1 + i] = dims[r - 1 - i]!
    plan[1 + r + i] = sa[r - 1 - i]!
    plan[1 + 2 * r + i] = sb[r - 1 - i]!
  }
  return { shape, size, plan }
}

/** A binary op of the addon: tfjs kernel name, the addon's op code, operand dtypes it takes, result dtype. */
interface BinarySpec {
  name: string
  code: number
  dtypes: readonly tf.DataType[]
  /** true: the result is bool (a comparison or logical op); false: the operands' dtype. */
  bool: boolean
}

const FLOAT_INT: readonly tf.DataType[] = ['float32', 'int32']
const ALL: readonly tf.DataType[] = ['float32', 'int32', 'bool']

/** The addon's binary op codes (`BinaryOp` in elementwise-binary.cc, same order). */
const BINARY_SPECS: readonly BinarySpec[] = [
  { name: tf.Add, code: 0, dtypes: FLOAT_INT, bool: false },
  { name: tf.Sub, code: 1, dtypes: FLOAT_INT, bool: false },
  { name: tf.Multiply, code: 2, dtypes: FLOAT_INT, bool: false },
  // int32 a / b and (a - b)^2, a ** b are doubles in JavaScript before the Int32Array store: cpu
  { name: tf.RealDiv, code: 3, dtypes: ['float32'], bool: false },
  { name: tf.Maximum, code: 4, dtypes: FLOAT_INT, bool: false },
  { name: tf.Minimum, code: 5, dtypes: FLOAT_INT, bool: false },
  { name: tf.SquaredDifference, code: 6, dtypes: ['float32'], bool: false },
  { name: tf.Pow, code: 7, dtypes: ['float32'], bool: false },
  { name: tf.Equal, code: 8, dtypes: ALL, bool: true },
  { name: tf.NotEqual, code: 9, dtypes: ALL, bool: true },
  { name: tf.Greater, code: 10, dtypes: ALL, bool: true },
  { name: tf.GreaterEqual, code: 11, dtypes: ALL, bool: true },
  { name: tf.Less, code: 12, dtypes: ALL, bool: true },
  { name: tf.LessEqual, code: 13, dtypes: ALL, bool: true },
  { name: tf.LogicalAnd, code: 14, dtypes: ['bool'], bool: true },
  { name: tf.LogicalOr, code: 15, dtypes: ['bool'], bool: true },
]

/** A broadcasting binary kernel over the addon's `binary` (the cpu kernel for what it has no form for). */
function binaryKernel(spec: BinarySpec): NativeKernel {
  const cpu = cpuKernel(spec.name)
  return {
    kernelName: spec.name,
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo }
      const backend = args.backend
      if (a.dtype !== b.dtype || !spec.dtypes.includes(a.dtype)) return cpu(args)
      const av = stored(backend, a)
      const bv = stored(backend, b)
      if (!av || !bv) return cpu(args)
      const p = broadcastPlan(a.shape, b.shape)
      if (!p) return cpu(args)
      const dtype = spec.bool ? 'bool' : (a.dtype as 'float32' | 'int32')
      const out = allocate(backend, dtype, p.size)
      if (p.size > 0) backend.addon.binary(spec.code, av, bv, out, p.plan)
      return backend.output(out, p.shape, dtype)
    },
  }
}

/** A unary op of the addon: tfjs kernel name, op code, input dtype, result dtype, attributes. */
interface UnarySpec {
  name: string
  code: number
  input: 'float32' | 'bool'
  output: 'float32' | 'bool'
  /** The op's attributes as the addon's two numbers. */
  params?: (attrs: tf.NamedAttrMap) => [number, number]
}

/** The addon's unary op codes (`UnaryOp` in elementwise-unary.cc, same order). */
const UNARY_SPECS: readonly UnarySpec[] = [
  { name: tf.Exp, code: 0, input: 'float32', output: 'float32' },
  { name: tf.Log, code: 1, input: 'float32', output: 'float32' },
  { name: tf.Sigmoid, code: 2, input: 'float32', output: 'float32' },
  { name: tf.Sqrt, code: 3, input: 'float32', output: 'float32' },
  { name: tf.Rsqrt, code: 4, input: 'float32', output: 'float32' },
  { name: tf.Square, code: 5, input: 'float32', output: 'float32' },
  { name: tf.Neg, code: 6, input: 'float32', output: 'float32' },
  { name: tf.Abs, code: 7, input: 'float32', output: 'float32' },
  { name: tf.Relu, code: 8, input: 'float32', output: 'float32' },
  { name: tf.Relu6, code: 9, input: 'float32', output: 'float32' },
  { name: tf.Tanh, code: 10, input: 'float32', output: 'float32' },
  { name: tf.Softplus, code: 11, input: 'float32', output: 'float32' },
  { name: tf.Reciprocal, code: 12, input: 'float32', output: 'float32' },
  { name: tf.Log1p, code: 13, input: 'float32', output: 'float32' },
  { name: tf.Expm1, code: 14, input: 'float32', output: 'float32' },
  { name: tf.Step, code: 15, input: 'float32', output: 'float32', params: (a) => [a['alpha'] as number, 0] },
  { name: tf.Floor, code: 16, input: 'float32', output: 'float32' },
  { name: tf.Ceil, code: 17, input: 'float32', output: 'float32' },
  { name: tf.Round, code: 18, input: 'float32', output: 'float32' },
  { name: tf.Sign, code: 19, input: 'float32', output: 'float32' },
  {
    name: tf.LeakyRelu,
    code: 20,
    input: 'float32',
    output: 'float32',
    params: (a) => [a['alpha'] as number, 0],
  },
  {
    name: tf.ClipByValue,
    code: 21,
    input: 'float32',
    output: 'float32',
    params: (a) => [a['clipValueMin'] as number, a['clipValueMax'] as number],
  },
  { name: tf.Elu, code: 22, input: 'float32', output: 'float32' },
  { name: tf.IsNan, code: 23, input: 'float32', output: 'bool' },
  { name: tf.IsFinite, code: 24, input: 'float32', output: 'bool' },
  { name: tf.IsInf, code: 25, input: 'float32', output: 'bool' },
  { name: tf.LogicalNot, code: 26, input: 'bool', output: 'bool' },
]

/** A unary kernel over the addon's `unary` (the cpu kernel for other dtypes). */
function unaryKernel(spec: UnarySpec): NativeKernel {
  const cpu = cpuKernel(spec.name)
  return {
    kernelName: spec.name,
    kernelFunc: (args) => {
      const { x } = args.inputs as { x: tf.TensorInfo }
      const backend = args.backend
      const xv = x.dtype === spec.input ? stored(backend, x) : undefined
      if (!xv) return cpu(args)
      const [p0, p1] = spec.params ? spec.params(args.attrs ?? {}) : [0, 0]
      const out = allocate(backend, spec.output, xv.length)
      if (xv.length > 0) backend.addon.unary(spec.code, xv, out, p0, p1)
      return backend.output(out, x.shape, spec.output)
    },
  }
}

const cpuCast = cpuKernel(tf.Cast)

/**
 * `Cast` between float32, int32 and bool: input x of any shape, attr `dtype`; output x's shape in
 * `dtype`. float32 -> int32 truncates and wraps as an Int32Array store does (NaN, Inf -> 0); to bool
 * is x != 0 (NaN -> true). Widening casts (int32/bool -> float32, bool -> int32) get storage of their
 * dtype (the cpu backend relabels the old array without copying, so a float32 tensor would sit on an
 * Int32Array; an int32 above 2^24 is rounded here, where the cpu backend keeps it exact). Same-dtype,
 * complex64 and string casts go to the cpu kernel.
 */
export const castKernel: NativeKernel = {
  kernelName: tf.Cast,
  kernelFunc: (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo }
    const dtype = (args.attrs as { dtype: tf.DataType }).dtype
    const backend = args.backend
    if (dtype === x.dtype || (dtype !== 'float32' && dtype !== 'int32' && dtype !== 'bool'))
      return cpuCast(args)
    const xv = stored(backend, x)
    if (!xv) return cpuCast(args)
    const out = allocate(backend, dtype, xv.length)
    if (xv.length > 0) backend.addon.cast(xv, out)
    return backend.output(out, x.shape, dtype)
  },
}

const cpuSelect = cpuKernel(tf.Select)

/**
 * `Select` (tf.where): inputs condition (bool), t and e of one dtype (float32, int32 or bool), all of
 * one shape (tf.where broadcasts them to it before the kernel); output `condition ? t : e` in t's
 * dtype and shape. The cpu kernel's rank-1-condition form takes other shapes.
 */
export const selectKernel: NativeKernel = {
  kernelName: tf.Select,
  kernelFunc: (args) => {
    const { condition, t, e } = args.inputs as {
      condition: tf.TensorInfo
      t: tf.TensorInfo
      e: tf.TensorInfo
    }
    const backend = args.backend
    const same = tf.util.arraysEqual(condition.shape, t.shape) && tf.util.arraysEqual(t.shape, e.shape)
    const cv = condition.dtype === 'bool' ? stored(backend, condition) : undefined
    const tv = stored(backend, t)
    const ev = stored(backend, e)
    if (!same || t.dtype !== e.dtype || !cv || !tv || !ev) return cpuSelect(args)
    const dtype = t.dtype as 'float32' | 'int32' | 'bool'
    const out = allocate(backend, dtype, tv.length)
    if (tv.length > 0) backend.addon.select(cv as Uint8Array, tv, ev, out)
    return backend.output(out, t.shape, dtype)
  },
}

const cpuAddN = cpuKernel(tf.AddN)

/**
 * `AddN`: N >= 1 tensors of one shape and dtype (float32 or int32); output their sum, accumulated
 * in input order and rounded at each step as the cpu kernel does. Other dtypes go to the cpu kernel.
 */
export const addNKernel: NativeKernel = {
  kernelName: tf.AddN,
  kernelFunc: (args) => {
    const tensors = args.inputs as unknown as tf.TensorInfo[] // cast: tfjs types inputs as a name map; this op passes them as an array
    const backend = args.backend
    const first = tensors[0]
    if (!first || (first.dtype !== 'float32' && first.dtype !== 'int32')) return cpuAddN(args)
    const values: (Float32Array | Int32Array)[] = []
    for (const t of tensors) {
      const v = t.dtype === first.dtype ? stored(backend, t) : undefined
      if (!v || v.length !== tf.util.sizeFromShape(first.shape)) return cpuAddN(args)
      values.push(v as Float32Array | Int32Array)
    }
    const out = allocate(backend, first.dtype, tf.util.sizeFromShape(first.shape)) as
      | Float32Array
      | Int32Array
    if (out.length > 0) backend.addon.addN(values, out)
    return backend.output(out, first.shape, first.dtype)
  },
}

/**
 * Every elementwise kernel of the native engine: Add, Sub, Multiply, Maximum, Minimum (float32,
 * int32), RealDiv, SquaredDifference, Pow (float32); Equal, NotEqual, Greater, GreaterEqual, Less,
 * LessEqual (float32, int32, bool -> bool); LogicalAnd, LogicalOr, LogicalNot (bool); the float32
 * unary ops Exp, Log, Sigmoid, Sqrt, Rsqrt, Square, Neg, Abs, Relu, Relu6, Tanh, Softplus,
 * Reciprocal, Log1p, Expm1, Step, Floor, Ceil, Round, Sign, LeakyRelu, ClipByValue, Elu and
 * IsNan, IsFinite, IsInf (-> bool); Cast, Select and AddN.
 */
export const ELEMENTWISE_KERNELS: readonly NativeKernel[] = [
  ...BINARY_SPECS.map(binaryKernel),
  ...UNARY_SPECS.map(unaryKernel),
  castKernel,
  selectKernel,
  addNKernel,
]
