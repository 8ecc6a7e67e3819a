/**
 * Reverse-mode differentiation over tfjs's tape that frees as it goes.
 *
 * `tf.variableGrads` keeps every intermediate gradient and every tensor saved for the backward
 * pass until the whole backward pass ends, so its peak is the forward's saved activations plus a
 * gradient for every intermediate tensor at once. Walking the same tape backward, the gradient of
 * a node's outputs is complete once that node is reached (every consumer of an output comes later
 * on the tape), and the tensors a node saved serve no other node; so here both are disposed as soon
 * as the node's input gradients are computed, and the peak is the saved activations plus the
 * gradients of one frontier. The values are those of `tf.variableGrads` (the same gradient
 * functions, in the same order, with the same accumulation). See docs/design.md#the-native-compute-engine.
 *
 * This reads three members of tfjs's engine that are not part of its typed surface
 * (`state.activeTape`, `state.gradientDepth`, `startTape`, `endTape`; tfjs-core 4.x); `engineTape()` checks they are
 * there and throws a clear error when a tfjs upgrade moved them.
 */
import * as tf from '@tensorflow/tfjs'
import { GradientError } from './errors.ts'

/** A node of tfjs's tape: one kernel or custom-gradient call recorded during the forward pass. */
interface TapeNode {
  id: number
  kernelName: string
  inputs: Record<string, tf.Tensor>
  outputs: tf.Tensor[]
  gradient?: (dys: (tf.Tensor | null)[]) => Record<string, () => tf.Tensor>
  saved?: tf.Tensor[]
}

/** The engine members this module needs (tfjs-core 4.x). */
interface EngineTape {
  state: { activeTape: TapeNode[] | null; gradientDepth: number }
  startTape(): void
  endTape(): void
  scopedRun<T>(start: () => void, end: () => void, f: () => T): T
  tidy<T extends tf.TensorContainer>(name: string, f: () => T): T
}

/** Thrown when the tfjs engine lacks the tape members this module reads (a tfjs version it was not written for). */
export class TapeUnavailableError extends Error {
  constructor(missing: string) {
    super(
      `the tfjs engine has no ${missing}: tape-gradients.ts was written for tfjs-core 4.x; pin @tensorflow/tfjs to 4.x`,
    )
    this.name = 'TapeUnavailableError'
  }
}

function engineTape(): EngineTape {
  const engine = tf.engine() as unknown as Partial<EngineTape> // cast: tfjs' engine keeps its tape private; only the fields read here are named
  for (const member of ['startTape', 'endTape', 'scopedRun', 'tidy'] as const)
    if (typeof engine[member] !== 'function') throw new TapeUnavailableError(`${member}()`)
  if (typeof engine.state?.gradientDepth !== 'number') throw new TapeUnavailableError('state.gradientDepth')
  return engine as EngineTape
}

/**
 * The nodes of `tape` on a path from one of `xs` to `y`, in tape order, each with its inputs cut
 * down to those that depend on `xs` (the only ones whose gradients are wanted).
 */
function pathFromXsToY(tape: readonly TapeNode[], xs: readonly tf.Tensor[], y: tf.Tensor): TapeNode[] {
  const fromX = new Set(xs.map((x) => x.id))
  const nodesFromX = new Set<number>()
  for (const node of tape) {
    if (Object.values(node.inputs).some((t) => fromX.has(t.id))) {
      for (const o of node.outputs) fromX.add(o.id)
      nodesFromX.add(node.id)
    }
  }
  const toY = new Set([y.id])
  const nodesToY = new Set<number>()
  for (let i = tape.length - 1; i >= 0; i--) {
    const node = tape[i]!
    if (node.outputs.some((o) => toY.has(o.id))) {
      for (const t of Object.values(node.inputs)) toY.add(t.id)
      nodesToY.add(node.id)
    }
  }
  const path: TapeNode[] = []
  for (const node of tape) {
    if (!nodesFromX.has(node.id) || !nodesToY.has(node.id)) continue
    const inputs: Record<string, tf.Tensor> = {}
    for (const [name, t] of Object.entries(node.inputs)) if (fromX.has(t.id)) inputs[name] = t
    path.push({ ...node, inputs })
  }
  return path
}

/**
 * `f()` and its gradients with respect to `xs`, as `tf.variableGrads(f, xs)` gives them, with
 * intermediate gradients and saved tensors freed during the backward pass (see the file's comment).
 * @param f builds a scalar from `xs` (and anything else); it runs once, recording the tape.
 * @param xs the variables (any float32 tensors) to differentiate against; each gets a float32
 *   gradient of its own shape.
 * @returns `value`, the scalar `f()` returned, and `grads` by variable name for every variable the
 *   value depends on (as `tf.variableGrads`, one it does not depend on has no entry); the caller
 *   disposes both.
 * @throws GradientError when `xs` is empty, `f` does not return a scalar, no recorded op leads
 *   from `xs` to it, or an op on the path has no usable gradient; `TapeUnavailableError` on a tfjs
 *   without the tape members.
 */
export function tapeGradients(
  f: () => tf.Scalar,
  xs: readonly tf.Variable[],
): { value: tf.Scalar; grads: Record<string, tf.Tensor> } {
  if (xs.length === 0) throw new GradientError('tapeGradients: no variables to differentiate against')
  const engine = engineTape()
  const y = engine.scopedRun(
    () => engine.startTape(),
    () => engine.endTape(),
    () => engine.tidy('forward', f),
  )
  const tape = engine.state.activeTape ?? []
  // the saved tensors of every recorded node go once the outermost gradient is done, as in tfjs
  const releaseTape = () => {
    if (engine.state.gradientDepth !== 0) return
    for (const node of tape) for (const t of node.saved ?? []) t.dispose()
    engine.state.activeTape = null
  }
  try {
    const grads = backward(engine, tape, xs, y)
    releaseTape()
    return { value: y as tf.Scalar, grads }
  } catch (err) {
    releaseTape()
    tf.dispose(y)
    throw err
  }
}

/**
 * The backward pass of `tapeGradients` over the recorded `tape`: gradients by variable name.
 * @throws GradientError when `y` is not a scalar, no op leads to it, or an op has no usable gradient.
 */
function backward(
  engine: EngineTape,
  tape: readonly TapeNode[],
  xs: readonly tf.Variable[],
  y: tf.TensorContainer,
): Record<string, tf.Tensor> {
  if (!(y instanceof tf.Tensor) || y.rank !== 0)
    throw new GradientError(
      `tapeGradients: f must return a scalar tensor, got ${y instanceof tf.Tensor ? `shape [${y.shape}]` : typeof y}`,
    )
  const path = pathFromXsToY(tape, xs, y)
  if (path.length === 0)
    throw new GradientError(
      'tapeGradients: no recorded op leads from the variables to the value; build it from them inside f',
    )
  return engine.tidy('backward', () => {
    const gradient = new Map<number, tf.Tensor>() // tensor id -> its accumulated gradient
    const uses = new Map<tf.Tensor, number>() // gradient tensor -> how many ids map to it
    const hold = (id: number, g: tf.Tensor) => {
      gradient.set(id, g)
      uses.set(g, (uses.get(g) ?? 0) + 1)
    }
    const release = (g: tf.Tensor) => {
      const n = (uses.get(g) ?? 0) - 1
      if (n > 0) uses.set(g, n)
      else {
        uses.delete(g)
        g.dispose()
      }
    }
    const wanted = new Set(xs.map((x) => x.id))
    hold(y.id, tf.onesLike(y))
    for (let i = path.length - 1; i >= 0; i--) {
      const node = path[i]!
      if (!node.gradient)
        throw new GradientError(`cannot compute a gradient: no gradient function for ${node.kernelName}`)
      const inputGradients = node.gradient(node.outputs.map((o) => gradient.get(o.id) ?? null))
      for (const [name, x] of Object.entries(node.inputs)) {
        const compute = inputGradients[name]
        if (!compute)
          throw new GradientError(`cannot backpropagate through input ${name} of ${node.kernelName}`)
        const dx = engine.tidy(name, compute)
        if (dx.dtype !== 'float32')
          throw new GradientError(
            `the gradient of input ${name} of ${node.kernelName} is ${dx.dtype}, not float32`,
          )
        if (!tf.util.arraysEqual(dx.shape, x.shape))
          throw new GradientError(
            `the gradient of input ${name} of ${node.kernelName} has shape [${dx.shape}], the input [${x.shape}]`,
          )
        const current = gradient.get(x.id)
        if (current === undefined) hold(x.id, dx)
        else {
          const sum = tf.add(current, dx)
          gradient.delete(x.id)
          release(current)
          if (!uses.has(dx)) dx.dispose()
          hold(x.id, sum)
        }
      }
      // this node was the last to need its outputs' gradients and its saved tensors
      for (const o of node.outputs) {
        const g = gradient.get(o.id)
        if (g === undefined || wanted.has(o.id)) continue
        gradient.delete(o.id)
        release(g)
      }
      for (const t of node.saved ?? []) if (!uses.has(t)) t.dispose()
    }
    const out: Record<string, tf.Tensor> = {}
    for (const x of xs) {
      const g = gradient.get(x.id)
      if (g !== undefined) out[x.name] = g
    }
    return out
  })
}
