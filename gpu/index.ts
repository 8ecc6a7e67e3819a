/**
 * The policy model: backend choice, tokenizer and chat template, transformer, sampler with KV
 * cache, optimizer, SFT trainer and checkpoints. Other folders import from here only.
 */

export * from './advantage.ts'
export * from './aggregation.ts'
export * from './backend.ts'
export * from './chat-template.ts'
export * from './entropy.ts'
export * from './errors.ts'
export * from './grpo.ts'
export * from './kl.ts'
export * from './kv-cache.ts'
export * from './overlong.ts'
export * from './pass-at-k.ts'
export * from './prng.ts'
export * from './registry.ts'
export * from './rl-step.ts'
export * from './sampler.ts'
export * from './shape.ts'
export * from './tokenizer.ts'
export * from './transformer.ts'
