import type * as tf from '@tensorflow/tfjs'
import { ShapeError } from './errors.ts'

/**
 * Checks that `tensor` has exactly `expected` as its shape.
 * @throws ShapeError naming `argument` otherwise.
 */
export function assertShape(argument: string, tensor: tf.Tensor, expected: readonly number[]): void {
  const actual = tensor.shape
  if (actual.length !== expected.length || actual.some((d, i) => d !== expected[i])) {
    throw new ShapeError(argument, `[${expected.join(', ')}]`, actual)
  }
}

/**
 * Checks that `tensor` is 2-D (`[batch, seqLen]`) and returns its two sizes.
 * @throws ShapeError naming `argument` otherwise.
 */
export function assertMatrix(argument: string, tensor: tf.Tensor): [number, number] {
  if (tensor.rank !== 2) throw new ShapeError(argument, '[batch, seqLen]', tensor.shape)
  return [tensor.shape[0]!, tensor.shape[1]!]
}
