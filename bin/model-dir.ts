import {
  type ChatFormat,
  CheckpointError,
  ConfigError,
  disposeTransformer,
  isHfModelDir,
  loadCheckpoint,
  loadCheckpointModel,
  loadHfModel,
  loadJinjaChatFormat,
  ModelTooLargeError,
  readCheckpointWeights,
  TemplateError,
  type Transformer,
  TriadChatFormat,
  UnsupportedArchitectureError,
} from '../gpu/index.ts'
import { CliError } from './errors.ts'

/**
 * The model and chat format of a model directory, for the commands that run a model (`triad serve`,
 * `triad env try --policy model:DIR`): a Hugging Face directory (`config.json` with `architectures`)
 * with its tokenizer's Jinja chat template; a triad checkpoint with triad's ChatML format; a
 * checkpoint of LoRA adapters on its base's weights, with the base's format (the base's Jinja
 * template when the base is a Hugging Face directory).
 * @param contextLength cap on the context allocated (a Hugging Face model's default is its
 *   `max_position_embeddings`).
 * @throws CliError (one line) when the model, its tokenizer or its template cannot be loaded.
 */
export async function loadModelDir(
  dir: string,
  contextLength?: number,
): Promise<{ model: Transformer; format: ChatFormat }> {
  try {
    if (await isHfModelDir(dir)) {
      const hf = await loadHfModel(dir, { contextLength })
      return withFormat(hf.model, dir, () => loadJinjaChatFormat(dir))
    }
    const read = await readCheckpointWeights(dir)
    if (read.lora && read.base && (await isHfModelDir(read.base))) {
      const { model } = await loadCheckpointModel(dir)
      return withFormat(model, dir, () => loadJinjaChatFormat(read.base!))
    }
    const ckpt = await loadCheckpoint(dir)
    return { model: ckpt.model, format: new TriadChatFormat(ckpt.tokenizer) }
  } catch (err) {
    if (isModelLoadError(err)) throw new CliError(`cannot load model: ${err.message}`, { cause: err })
    throw err
  }
}

/**
 * Whether an error is one of loading a model directory's bad input (a checkpoint, architecture,
 * size, setting or template error, each one line), which the commands print as one line.
 */
export function isModelLoadError(err: unknown): err is Error {
  return (
    err instanceof CheckpointError ||
    err instanceof UnsupportedArchitectureError ||
    err instanceof ModelTooLargeError ||
    err instanceof ConfigError ||
    err instanceof TemplateError
  )
}

/** The model with a format read by `load`, checked against the model's vocabulary; frees the model on an error. */
function withFormat(
  model: Transformer,
  dir: string,
  load: () => ChatFormat,
): { model: Transformer; format: ChatFormat } {
  let format: ChatFormat
  try {
    format = load()
  } catch (err) {
    disposeTransformer(model)
    throw err
  }
  if (format.vocabSize > model.config.vocabSize) {
    disposeTransformer(model)
    throw new CliError(
      `cannot load model: ${dir}: the tokenizer has ${format.vocabSize} ids, the model's vocabulary ${model.config.vocabSize}`,
    )
  }
  return { model, format }
}
