import {
  type ChatFormat,
  CheckpointError,
  type FullTransformerConfig,
  fullLoraConfig,
  initAdapters,
  type LoraConfig,
  loadChatFormatOf,
  loadHfModel,
  readCheckpointWeights,
  type Transformer,
  withAdapters,
} from '../../gpu/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import type { NodeConfig } from './config.ts'

/**
 * A run's pretrained policy as one process holds it: the frozen base loaded once from the Hugging
 * Face directory (shared by the learner's model, its KL reference and every policy engine of the
 * process), the model's own tokenizer and Jinja chat template, and the LoRA settings.
 */
export interface PretrainedPolicy {
  /** The Hugging Face directory (absolute). */
  dir: string
  /** The base model without adapters; never freed while the process runs. */
  base: Transformer
  /** The base's full config (vocabulary, GQA, norms, rope), the one every adapter version shares. */
  modelConfig: FullTransformerConfig
  /** The model's own tokenizer and chat template. */
  chat: ChatFormat
  lora: LoraConfig
}

/**
 * Loads `config.pretrained` (its weights as float32 on the current backend, its context capped at
 * `config.model.contextLength`, its tokenizer and template).
 * @throws InvariantError when the config names no pretrained model (callers check first);
 *   what `loadHfModel` and `loadJinjaChatFormat` throw (CheckpointError, ModelTooLargeError,
 *   TemplateError...);
 *   CheckpointError when the tokenizer has more ids than the model's embedding rows.
 */
export async function loadPretrainedPolicy(
  config: Pick<NodeConfig, 'pretrained'> & { model: Pick<NodeConfig['model'], 'contextLength'> },
): Promise<PretrainedPolicy> {
  const p = config.pretrained
  if (!p) throw new InvariantError('the run names no pretrained model (node config without pretrained)')
  const { model: base } = await loadHfModel(p.dir, { contextLength: config.model.contextLength })
  const chat = loadChatFormatOf(p.dir, base)
  return { dir: p.dir, base, modelConfig: base.config, chat, lora: p.lora }
}

/**
 * A policy on the shared base with fresh adapters: A random (seeded), B zero, so it computes what
 * the base computes until it is trained. Freeing it frees the adapters alone.
 */
export function freshAdapters(policy: PretrainedPolicy, seed: number): Transformer {
  const adapters = initAdapters(policy.modelConfig, fullLoraConfig(policy.lora), seed)
  return withAdapters(policy.base, adapters, policy.lora, { seed, base: policy.dir })
}

/**
 * A policy on the shared base with the adapters of a checkpoint directory (`adapter_model.safetensors`).
 * @throws CheckpointError when the checkpoint cannot be read, holds no adapters, or its model config
 *   or LoRA settings differ from the run's.
 */
export async function adaptersFromCheckpoint(
  policy: PretrainedPolicy,
  dir: string,
  seed: number,
): Promise<Transformer> {
  const read = await readCheckpointWeights(dir)
  if (!read.lora) throw new CheckpointError(dir, 'holds no LoRA adapters, but the run trains adapters')
  if (JSON.stringify(read.config) !== JSON.stringify(policy.modelConfig))
    throw new CheckpointError(dir, "model config differs from the run's pretrained model")
  if (JSON.stringify(read.lora) !== JSON.stringify(fullLoraConfig(policy.lora)))
    throw new CheckpointError(
      dir,
      `LoRA settings ${JSON.stringify(read.lora)} differ from the run's ${JSON.stringify(fullLoraConfig(policy.lora))}`,
    )
  return withAdapters(policy.base, read.weights, policy.lora, { seed, base: policy.dir })
}
