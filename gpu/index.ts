/**
 * The policy model: backend choice, tokenizer and chat template, transformer, sampler with KV
 * cache, optimizer, SFT trainer, checkpoints, RL losses. Other folders import from here only.
 *
 * The surface the learner and the policy engines use (tensors float32 unless noted; `[batch,
 * seqLen]` arrays are row-major):
 * - `chooseBackend({backend?})`: pick and activate tfjs-node-gpu, tfjs-node, wasm or cpu
 *   (`TRIAD_BACKEND` forces one); returns `{name, ...}` to record with the run.
 * - `new Tokenizer()`: byte-level ids 0..255 plus special tokens (`imEndId` ends a turn);
 *   `learnTaskTokenizer(texts, merges)` adds byte-pair merges learned from a corpus (`bpe.ts`);
 *   `saveTokenizer(file, tok)` / `loadTokenizer(file)` share it between processes (`tokenizer.json`).
 *   `renderChat(tok, messages, {tools})` gives `{ids: Int32Array, lossMask: Uint8Array}` (1 on
 *   assistant tokens); `renderPrompt` ends with the assistant header; `parseAssistant(text)` gives
 *   `{ok: true, message}` or `{ok: false, error}` and never throws.
 * - `ChatFormat`: the one surface the agent loop and learner use for tokens and templates, either
 *   `new TriadChatFormat(tok)` (the above) or `loadJinjaChatFormat(dir)` (a Hugging Face model's
 *   `tokenizer.json` through `@huggingface/tokenizers` and its Jinja `chat_template`).
 * - `createTransformer(config, {seed} | {weights}, lora?)`, `disposeTransformer(model)`; with `lora`
 *   (`{rank, alpha, targets, dropout}`, `lora.ts`) the weights are frozen and `model.params` holds
 *   the adapters alone; `withAdapters(base, adapters)` shares a base between adapter versions;
 *   `forward(model, tokens [batch, seqLen] int32)` gives logits `[batch, seqLen, vocabSize]`;
 *   `tokenLogprobs(model, tokens, targets)` gives `[batch, seqLen]` log p(target), differentiable.
 * - `generate(model, prompts: number[][], {maxNewTokens, temperature, top_p, stopTokens, seed})`
 *   gives per prompt `{tokens: Int32Array, logprobs: Float32Array, finishReason}` (KV cache,
 *   ragged prompts); `ContinuousBatcher` shares passes among concurrent requests.
 * - `new AdamW(model.params, {weightDecay, gradClip})`, `.step(grads by name, lr)`;
 *   `lossAndGrads(model, lossFn)`; `warmupCosine({peakLr, warmupSteps, totalSteps})`.
 * - `makeBatches(renderedChats, ...)`, `sftStep(model, opt, batch, lr)`, `trainSft(...)` (loss
 *   curve records); `rlStep` for GRPO-TCR.
 * - `saveCheckpoint(dir, model, {tokenizer})` / `loadCheckpoint(dir)` (model.safetensors,
 *   config.json, tokenizer.json); `getWeights(model)` / `setWeights(model, record)` move weights as
 *   `Record<string, Float32Array>`; `encodeSafetensors` / `decodeSafetensors` for bytes.
 * - `loadHfModel(dir)`: a Hugging Face directory (Llama, Qwen2, Qwen3; sharded safetensors; BF16,
 *   F16, F32) as the same `Transformer`; `exportHf(checkpointDir, outDir)` writes one back;
 *   `writeTinyQwen3(dir)` writes a tiny random one in Qwen3's layout with the real Qwen3 tokenizer
 *   (`triad model tiny`), `writeRandomHfCheckpoint(dir, spec)` one of any size and architecture.
 */

export { ADAMW_DEFAULTS, AdamW, type AdamWConfig } from './adamw.ts'
export {
  AdvantageEstimatorName,
  broadcastToTokens,
  computeAdvantageGrpo,
  computeAdvantageGrpoNoStd,
  getAdvantageEstimator,
  normalizeTaskAdvantages,
} from './advantage.ts'
export {
  AggregationMode,
  aggregateSeqMeanTokenMean,
  aggregateSeqMeanTokenSum,
  aggregateTokenMean,
  getAggregator,
} from './aggregation.ts'
export {
  type BackendChoice,
  BackendName,
  checkBackendSettings,
  chooseBackend,
  machineCores,
  resolveThreads,
  THREADS_ENV,
} from './backend.ts'
export { computeBatchAdvantages } from './batch-advantages.ts'
export { BytePairEncoding, learnMerges, MAX_CHUNK_BYTES, splitChunks, splitOnSeparators } from './bpe.ts'
export type { ChatFormat } from './chat-format.ts'
export {
  assistantHeader,
  ParseErrorCode,
  parseAssistant,
  type RenderedChat,
  renderChat,
  renderMessage,
  renderPrompt,
  renderTools,
  ToolFormat,
} from './chat-template.ts'
export {
  CheckpointFile,
  type CheckpointWeights,
  type LoadedCheckpoint,
  loadCheckpoint,
  loadCheckpointModel,
  readCheckpointWeights,
  saveCheckpoint,
} from './checkpoint.ts'
export { computeConsistencyRewards, signedOutcome, UNPARSEABLE_PENALTY } from './consistency-reward.ts'
export {
  type BatcherStats,
  type BatchRequestOptions,
  ContinuousBatcher,
  type ContinuousBatcherOptions,
} from './continuous-batching.ts'
export { maskUniformGroups } from './dynamic-sampling.ts'
export { computeEntropyFromLogits } from './entropy.ts'
export {
  BackendActivationError,
  BackendUnavailableError,
  BatcherClosedError,
  CheckpointError,
  ConfigError,
  GradientError,
  ModelTooLargeError,
  NonFiniteError,
  NonFiniteWeightsError,
  ShapeError,
  TemplateError,
  ThreadCountError,
  UnknownBackendError,
  UnknownVariantError,
  UnsupportedArchitectureError,
} from './errors.ts'
export { lossAndGrads } from './gradients.ts'
export {
  computePolicyLossGrpoTcr,
  computeTokenLossGrpoTcr,
  GRPO_TCR_DEFAULTS,
  type GrpoTcrConfig,
  PolicyMetric,
} from './grpo.ts'
export { toHfConfig } from './hf-config.ts'
export { exportHf } from './hf-export.ts'
export {
  backendMemoryLimit,
  isHfModelDir,
  loadHfModel,
  modelMemoryBytes,
  readHfGenerationConfig,
  readHfModelConfig,
  readHfModelWeights,
} from './hf-model.ts'
export {
  type RandomHfArchitecture,
  type RandomHfModel,
  type RandomHfSpec,
  writeRandomHfCheckpoint,
} from './hf-random-checkpoint.ts'
export { hfTensorShapes } from './hf-tensors.ts'
export { QWEN3_VOCAB_ROWS, type TinyQwen3Options, writeTinyQwen3 } from './hf-tiny-qwen3.ts'
export { JinjaChatFormat, loadJinjaChatFormat } from './jinja-chat-format.ts'
export { computeKlK1, computeKlK2, computeKlK3, getKlEstimator, KlEstimatorName } from './kl.ts'
export { KvCache, RaggedKvCache } from './kv-cache.ts'
export { lastTokenLogits } from './last-logits.ts'
export {
  adapterShapes,
  fullLoraConfig,
  initAdapters,
  type LoraConfig,
  LoraTarget,
  mergeAdapters,
} from './lora.ts'
export { constantLr, type LrSchedule, warmupCosine } from './lr-schedule.ts'
export { GradientAccumulator, lengthBuckets, type RlOptimizer } from './micro-batch.ts'
export {
  getOffPolicyCorrection,
  OFF_POLICY_DEFAULTS,
  type OffPolicyConfig,
  OffPolicyLevel,
  OffPolicyName,
  offPolicyMetrics,
} from './off-policy.ts'
export {
  computeOverlongPenalty,
  type OverlongConfig,
  overlongPenalty,
  shapeOverlongRewards,
} from './overlong.ts'
export { avgAtK, passAtK, passAtKOver } from './pass-at-k.ts'
export { type CheckpointPolicy, loadChatFormatOf, loadCheckpointPolicy } from './policy-checkpoint.ts'
export { loadPretrainedTokenizer } from './pretrained-tokenizer.ts'
export { createRng, type Rng, shuffle } from './prng.ts'
export { QWEN3_TOKENIZER_DIR, QWEN3_TOKENIZER_FILES } from './qwen3-tokenizer-files.ts'
export {
  REWARD_MODEL_STEP_DEFAULTS,
  type RewardModelBatch,
  type RewardModelStepConfig,
  type RewardModelTrainState,
  rewardModelStep,
  type VerdictTokens,
} from './reward-model-step.ts'
export type { RlBatch } from './rl-batch.ts'
export { RL_STEP_DEFAULTS, type RlStepConfig, type RlStepMetrics, rlStep } from './rl-step.ts'
export {
  decodeSafetensors,
  encodeSafetensors,
  f32ToBf16Bits,
  f32ToF16Bits,
  type NamedTensor,
  nonFiniteValues,
  SafetensorsDtype,
} from './safetensors.ts'
export { FinishReason, type Generation, generate, pick } from './sampler.ts'
export {
  makeBatches,
  type SftBatch,
  type SftLogRecord,
  sftLoss,
  sftStep,
  sftStepCount,
  trainSft,
} from './sft.ts'
export { SftWorkerError, SftWorkers, withSftWorkers } from './sft-workers.ts'
export {
  computeGroupStepAdvantages,
  computeIntegratedStepRewards,
  meanJudgement,
  padTokenAdvantages,
  stepAdvantagesToTokens,
  zscorePerStepIndex,
} from './step-reward.ts'
export {
  DEFAULT_TOKENIZER_SETTINGS,
  learnTaskTokenizer,
  SpecialToken,
  Tokenizer,
  type TokenizerSettings,
} from './tokenizer.ts'
export { loadTokenizer, saveTokenizer, tokenizerJson } from './tokenizer-file.ts'
export {
  createTransformer,
  disposeTransformer,
  type FullTransformerConfig,
  forward,
  fullConfig,
  initWeights,
  parameterBytes,
  parameterCount,
  paramShapes,
  type Transformer,
  type TransformerConfig,
  tokenLogprobs,
  tokenStatsAt,
  trainingFlopsPerToken,
  withAdapters,
} from './transformer.ts'
export { asChatFormat, TriadChatFormat } from './triad-chat-format.ts'
export { getWeights, setWeights } from './weights.ts'
