/**
 * What the tests of `gpu/` import besides its index: names no other folder needs. Only
 * `test/` imports this file (the layering test holds the other folders to `index.ts`).
 */
export { computeAdvantageGrpo } from './advantage.ts'
export { BytePairEncoding, learnMerges, MAX_CHUNK_BYTES, splitChunks, splitOnSeparators } from './bpe.ts'
export {
  assistantHeader,
  ParseErrorCode,
  parseAssistant,
  renderMessage,
  renderTools,
} from './chat-template.ts'
export type { LoadedCheckpoint } from './checkpoint.ts'
export type { BatchRequestOptions } from './continuous-batching.ts'
export { readHfModelWeights } from './hf-model.ts'
export {
  type RandomHfArchitecture,
  type RandomHfModel,
  type RandomHfSpec,
  writeRandomHfCheckpoint,
} from './hf-random-checkpoint.ts'
export { QWEN3_VOCAB_ROWS } from './hf-tiny-qwen3.ts'
export { KvCache } from './kv-cache.ts'
export { adapterShapes, mergeAdapters } from './lora.ts'
export { getPolicyLoss, type PolicyLoss, PolicyLosses, PolicyLossName } from './policy-loss.ts'
export { QWEN3_TOKENIZER_DIR } from './qwen3-tokenizer-files.ts'
export { f32ToBf16Bits, f32ToF16Bits } from './safetensors.ts'
export { SftWorkerError } from './sft-workers.ts'
export {
  computeIntegratedStepRewards,
  meanJudgement,
  stepAdvantagesToTokens,
  zscorePerStepIndex,
} from './step-reward.ts'
export { DEFAULT_TOKENIZER_SETTINGS } from './tokenizer.ts'
export { forward, paramShapes, tokenStatsAt } from './transformer.ts'
