import { readFile } from 'node:fs/promises'
import { CheckpointError } from './errors.ts'

/**
 * The parsed JSON of a model directory's file (`config.json`, `model.safetensors.index.json`, ...).
 * @throws CheckpointError naming the file: 'cannot read' (missing, unreadable) or 'not JSON'.
 */
export async function readJsonFile(file: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new CheckpointError(file, 'not JSON', { cause: err })
  }
}
