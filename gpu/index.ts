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
 *   F16, F32) as the same `Transformer`; `exportHf(checkpointDir, outDir)` writes one back.
 */

export * from './adamw.ts'
export * from './advantage.ts'
export * from './aggregation.ts'
export * from './backend.ts'
export * from './batch-advantages.ts'
export * from './bpe.ts'
export * from './chat-format.ts'
export * from './chat-template.ts'
export * from './checkpoint.ts'
export * from './consistency-reward.ts'
export * from './continuous-batching.ts'
export * from './dynamic-sampling.ts'
export * from './entropy.ts'
export * from './errors.ts'
export * from './gradients.ts'
export * from './grpo.ts'
export * from './hf-config.ts'
export * from './hf-export.ts'
export * from './hf-model.ts'
export * from './hf-tensors.ts'
export * from './hf-tokenizer-export.ts'
export * from './jinja-chat-format.ts'
export * from './kl.ts'
export * from './kv-cache.ts'
export * from './last-logits.ts'
export * from './left-pad.ts'
export * from './lora.ts'
export * from './lr-schedule.ts'
export * from './micro-batch.ts'
export * from './off-policy.ts'
export * from './overlong.ts'
export * from './pass-at-k.ts'
export * from './prefix-cache.ts'
export * from './pretrained-tokenizer.ts'
export * from './prng.ts'
export * from './registry.ts'
export * from './reward-model-step.ts'
export * from './rl-batch.ts'
export * from './rl-step.ts'
export * from './safetensors.ts'
export * from './sampler.ts'
export * from './sft.ts'
export * from './sft-workers.ts'
export * from './shape.ts'
export * from './step-reward.ts'
export * from './think-block.ts'
export * from './tokenizer.ts'
export * from './tokenizer-file.ts'
export * from './transformer.ts'
export * from './triad-chat-format.ts'
export * from './weights.ts'
