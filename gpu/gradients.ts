import * as tf from '@tensorflow/tfjs'
import { nativeSumSquares } from './native-kernels/sum-squares.ts'
import { tapeGradients } from './tape-gradients.ts'
import type { Transformer } from './transformer.ts'

/** A scalar loss and its gradients by parameter name. The caller disposes `grads` (`tf.dispose`). */
export interface LossAndGrads {
  /** The loss value (synchronised from the device). */
  loss: number
  /** Gradient of the loss for every parameter, by the names of `model.params`; float32, same shapes. */
  grads: Record<string, tf.Tensor>
}

/**
 * Evaluates `lossFn` (which must return a scalar built from the model's parameters) and its
 * gradients with respect to every parameter (`model.params`: the adapters alone under LoRA, whose
 * frozen weights get none). A model with LoRA dropout drops its adapters' inputs during `lossFn`
 * only, with masks seeded from the model's LoRA seed and a count of these calls. Intermediate
 * gradients and saved activations are freed during the backward pass (`tapeGradients`), so the
 * peak is the saved activations and one frontier of gradients.
 */
export async function lossAndGrads(model: Transformer, lossFn: () => tf.Scalar): Promise<LossAndGrads> {
  const names = new Map([...model.params].map(([name, variable]) => [variable.name, name]))
  const lora = model.lora
  if (lora) lora.dropoutSeed = lora.seed + lora.draws++
  let result: ReturnType<typeof tapeGradients>
  try {
    result = tapeGradients(lossFn, [...model.params.values()])
  } finally {
    if (lora) lora.dropoutSeed = undefined
  }
  const { value, grads } = result
  const loss = (await value.data())[0]!
  value.dispose()
  const byName: Record<string, tf.Tensor> = {}
  for (const [varName, g] of Object.entries(grads)) byName[names.get(varName)!] = g
  return { loss, grads: byName }
}

/**
 * Gradient accumulation: adds `grads` into `sum` by parameter name (a name new to `sum` is taken
 * over as it is). The tensors of `grads` and the replaced sums are disposed; the caller disposes
 * `sum` in the end.
 */
export function addGradients(
  sum: Record<string, tf.Tensor>,
  grads: Readonly<Record<string, tf.Tensor>>,
): void {
  for (const [name, g] of Object.entries(grads)) {
    const prev = sum[name]
    if (!prev) {
      sum[name] = g
      continue
    }
    sum[name] = tf.keep(prev.add(g))
    prev.dispose()
    g.dispose()
  }
}

/** What to do about a non-finite loss or gradient norm, for `NonFiniteError`. */
export const TRAINING_TODO =
  'training stopped before the update: lower the learning rate (or warm it up longer), or check the data and the starting weights'

/**
 * Names of the gradients holding a NaN or an infinity, in `grads` order (one small read-back per
 * tensor: meant for after a non-finite gradient norm was seen, to say where it came from).
 */
export async function nonFiniteGradients(grads: Record<string, tf.Tensor>): Promise<string[]> {
  const out: string[] = []
  for (const [name, g] of Object.entries(grads)) {
    const bad = tf.tidy(() => tf.logicalNot(tf.all(tf.isFinite(g))))
    const yes = (await bad.data())[0] === 1
    bad.dispose()
    if (yes) out.push(name)
  }
  return out
}

/**
 * Where non-finite gradients are, for an error: ` in the gradient of layers.0.attn.wq and 3 other
 * parameters` (the first names the layer), or `''` when there are none.
 */
export function nonFiniteGradientText(names: readonly string[]): string {
  if (names.length === 0) return ''
  const more = names.length - 1
  return ` in the gradient of ${names[0]}${more ? ` and ${more} other parameter${more === 1 ? '' : 's'}` : ''}`
}

/**
 * Global L2 norm `||g||_2 = sqrt(sum over tensors of sum g^2)` of a set of gradients (the norm that
 * gradient clipping scales by; Pascanu et al. 2013, eq. 7): one native pass per tensor where the
 * native engine holds it, tfjs ops for the rest. 0 for no tensors; NaN or Infinity when a value is.
 * @param grads float32 tensors of any shapes (not disposed).
 */
export async function globalNorm(grads: readonly tf.Tensor[]): Promise<number> {
  let squares = 0
  const rest: tf.Tensor[] = []
  for (const g of grads) {
    const s = nativeSumSquares(g)
    if (s === undefined) rest.push(g)
    else squares += s
  }
  if (rest.length > 0) {
    const t = tf.tidy(() => tf.addN(rest.map((g) => tf.sum(tf.square(g)))))
    squares += (await t.data())[0]!
    t.dispose()
  }
  return Math.sqrt(squares)
}
