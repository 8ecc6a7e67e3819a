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
export { AdvantageEstimatorName } from './advantage.ts'
export { AggregationMode } from './aggregation.ts'
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
export type { ChatFormat } from './chat-format.ts'
export { type RenderedChat, renderChat, renderPrompt, ToolFormat } from './chat-template.ts'
export {
  CheckpointFile,
  type CheckpointWeights,
  loadCheckpoint,
  loadCheckpointModel,
  readCheckpointWeights,
  saveCheckpoint,
} from './checkpoint.ts'
export { computeConsistencyRewards, signedOutcome, UNPARSEABLE_PENALTY } from './consistency-reward.ts'
export { type BatcherStats, ContinuousBatcher, type ContinuousBatcherOptions } from './continuous-batching.ts'
export {
  BackendUnavailableError,
  BatcherClosedError,
  CheckpointError,
  ConfigError,
  ModelTooLargeError,
  ShapeError,
  TemplateError,
  ThreadCountError,
  UnknownBackendError,
  UnsupportedArchitectureError,
} from './errors.ts'
export { lossAndGrads } from './gradients.ts'
export { GRPO_TCR_DEFAULTS } from './grpo.ts'
export { toHfConfig } from './hf-config.ts'
export { exportHf } from './hf-export.ts'
export {
  backendMemoryLimit,
  isHfModelDir,
  loadHfModel,
  modelMemoryBytes,
  readHfGenerationConfig,
  readHfModelConfig,
} from './hf-model.ts'
export { hfTensorShapes } from './hf-tensors.ts'
export { writeTinyQwen3 } from './hf-tiny-qwen3.ts'
export { JinjaChatFormat, loadJinjaChatFormat } from './jinja-chat-format.ts'
export { KlEstimatorName } from './kl.ts'
export { lastTokenLogits } from './last-logits.ts'
export { fullLoraConfig, initAdapters, type LoraConfig, LoraTarget } from './lora.ts'
export { constantLr, type LrSchedule, warmupCosine } from './lr-schedule.ts'
export { OFF_POLICY_DEFAULTS, OffPolicyLevel, OffPolicyName } from './off-policy.ts'
export { type OverlongConfig, overlongPenalty } from './overlong.ts'
export { avgAtK, passAtKOver } from './pass-at-k.ts'
export { loadChatFormatOf, loadCheckpointPolicy } from './policy-checkpoint.ts'
export { loadPretrainedTokenizer } from './pretrained-tokenizer.ts'
export { createRng, type Rng, shuffle } from './prng.ts'
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
export { decodeSafetensors, encodeSafetensors, type NamedTensor, SafetensorsDtype } from './safetensors.ts'
export { FinishReason, generate, pick } from './sampler.ts'
export {
  type SftLogRecord,
  sftStep,
  sftStepCount,
  trainSft,
} from './sft.ts'
export { makeBatches, type SftBatch } from './sft-batch.ts'
export { sftLoss } from './sft-loss.ts'
export { SftWorkers, withSftWorkers } from './sft-workers.ts'
export { computeGroupStepAdvantages, padTokenAdvantages } from './step-reward.ts'
export { learnTaskTokenizer, SpecialToken, Tokenizer, type TokenizerSettings } from './tokenizer.ts'
export { loadTokenizer, saveTokenizer, tokenizerJson } from './tokenizer-file.ts'
export {
  createTransformer,
  disposeTransformer,
  initWeights,
  parameterBytes,
  parameterCount,
  type Transformer,
  tokenLogprobs,
  trainingFlopsPerToken,
  withAdapters,
} from './transformer.ts'
export { type FullTransformerConfig, fullConfig, type TransformerConfig } from './transformer-config.ts'
export { asChatFormat, TriadChatFormat } from './triad-chat-format.ts'
export { getWeights, setWeights } from './weights.ts'
