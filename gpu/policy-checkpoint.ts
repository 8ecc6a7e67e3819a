import type { ChatFormat } from './chat-format.ts'
import {
  type LoadedCheckpoint,
  loadCheckpoint,
  loadCheckpointModel,
  readCheckpointWeights,
} from './checkpoint.ts'
import { CheckpointError } from './errors.ts'
import { isHfModelDir } from './hf-model.ts'
import { loadJinjaChatFormat } from './jinja-chat-format.ts'
import { disposeTransformer, type Transformer } from './transformer.ts'
import { TriadChatFormat } from './triad-chat-format.ts'

/** A run checkpoint loaded with the chat format its policy was trained with. */
export interface CheckpointPolicy {
  model: Transformer
  /**
   * triad's ChatML format over the checkpoint's `tokenizer.json`, or, for LoRA adapters on a Hugging
   * Face base, the base's own tokenizer and Jinja chat template.
   */
  format: ChatFormat
  /** The safetensors `__metadata__`. */
  metadata: LoadedCheckpoint['metadata']
}

/**
 * Loads a run checkpoint of either kind a run writes: triad's own model (`model.safetensors` and
 * `tokenizer.json`), or LoRA adapters (`adapter_model.safetensors`, PEFT layout) on the Hugging
 * Face directory its `config.json` names as `base` (loaded from there, with its chat template).
 * @throws CheckpointError for a missing or malformed file, a base that is missing or of another
 *   size, or a tokenizer with more ids than the model's vocabulary; TemplateError for a base
 *   without a chat template.
 */
export async function loadCheckpointPolicy(dir: string): Promise<CheckpointPolicy> {
  const read = await readCheckpointWeights(dir)
  if (read.lora && read.base && (await isHfModelDir(read.base))) {
    const { model, metadata } = await loadCheckpointModel(dir)
    return { model, format: loadChatFormatOf(read.base, model), metadata }
  }
  const ckpt = await loadCheckpoint(dir)
  return { model: ckpt.model, format: new TriadChatFormat(ckpt.tokenizer), metadata: ckpt.metadata }
}

/**
 * The Jinja chat format of the Hugging Face directory `dir` for `model` (loaded from it, or adapters
 * on it): its tokenizer must fit the model's embedding rows. On any error `model` is disposed, so
 * a caller that just loaded it leaks nothing.
 * @throws TemplateError for a directory without a chat template (what `loadJinjaChatFormat`
 *   throws); CheckpointError when the tokenizer has more ids than the model's vocabulary.
 */
export function loadChatFormatOf(dir: string, model: Transformer): ChatFormat {
  try {
    const format = loadJinjaChatFormat(dir)
    if (format.vocabSize > model.config.vocabSize)
      throw new CheckpointError(
        dir,
        `the tokenizer has ${format.vocabSize} ids, the model's vocabulary ${model.config.vocabSize}`,
      )
    return format
  } catch (err) {
    disposeTransformer(model)
    throw err
  }
}
