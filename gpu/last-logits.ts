import * as tf from '@tensorflow/tfjs'
import { leftPad, leftPaddedTensors, rowChunks } from './left-pad.ts'
import { forward, type Transformer } from './transformer.ts'

/**
 * Next-token logits after each prompt, `[prompts]` rows of `[vocabSize]` float32, from left-padded
 * passes (padding masked out, positions counted from each prompt's first token) of at most
 * `passTokens` padded tokens each (bounds the wasm heap). No gradient.
 */
export async function lastTokenLogits(
  model: Transformer,
  prompts: readonly Int32Array[],
  passTokens: number,
): Promise<Float32Array[]> {
  if (prompts.length === 0) return []
  const width = Math.max(...prompts.map((p) => p.length))
  const v = model.config.vocabSize
  const out: Float32Array[] = []
  for (const [r0, r1] of rowChunks(prompts.length, width, passTokens)) {
    const padded = leftPad(prompts.slice(r0, r1))
    const logits = tf.tidy(() => {
      const t = leftPaddedTensors(padded)
      return forward(model, t.ids, {
        positions: t.positions,
        attentionMask: t.attentionMask,
        lastOnly: true,
      })
    })
    const data = (await logits.data()) as Float32Array
    logits.dispose()
    for (let i = 0; i < r1 - r0; i++) out.push(data.slice(i * v, (i + 1) * v))
  }
  return out
}
