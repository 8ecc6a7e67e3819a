import { createTransformer, saveCheckpoint, Tokenizer } from '../../gpu/index.ts'
import { useTestBackend } from './test-backend.ts'

/**
 * Writes a checkpoint of a tiny random policy (1 layer, width 16, byte-level tokenizer, context
 * 384 unless `contextLength` says otherwise) into `dir`: enough for `triad eval` to play episodes
 * quickly, not to solve them.
 */
export async function writeTinyCheckpoint(dir: string, seed = 1, contextLength = 384): Promise<void> {
  await useTestBackend()
  const tokenizer = new Tokenizer()
  const model = createTransformer(
    { layers: 1, width: 16, heads: 2, contextLength, vocabSize: tokenizer.vocabSize },
    { seed },
  )
  await saveCheckpoint(dir, model, { tokenizer })
}
