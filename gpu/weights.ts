import * as tf from '@tensorflow/tfjs'
import { ShapeError } from './errors.ts'
import type { Transformer } from './transformer.ts'

/**
 * A model's parameters as plain arrays by name (see `paramShapes` for names and shapes), float32,
 * row-major. The form weights travel in (object store, checkpoints); copies, not views.
 */
export async function getWeights(model: Transformer): Promise<Record<string, Float32Array>> {
  const out: Record<string, Float32Array> = {}
  for (const [name, variable] of model.params) out[name] = ((await variable.data()) as Float32Array).slice()
  return out
}

/**
 * Overwrites every parameter from plain arrays (all names required, extra names rejected).
 * Checks everything before changing anything.
 * @throws ShapeError when a name is missing or unknown, or a size differs.
 */
export function setWeights(model: Transformer, weights: Readonly<Record<string, Float32Array>>): void {
  for (const [name, variable] of model.params) {
    const data = weights[name]
    if (!data || data.length !== variable.size)
      throw new ShapeError(name, `${variable.size} float32 values for [${variable.shape.join(', ')}]`, [
        data?.length ?? 0,
      ])
  }
  for (const name of Object.keys(weights))
    if (!model.params.has(name))
      throw new ShapeError(name, 'a parameter of this model', [weights[name]!.length])
  tf.tidy(() => {
    for (const [name, variable] of model.params)
      variable.assign(tf.tensor(weights[name]!, variable.shape, 'float32'))
  })
}
