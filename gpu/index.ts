/**
 * The policy model: backend choice, tokenizer and chat template, transformer, sampler with KV
 * cache, optimizer, SFT trainer and checkpoints. Other folders import from here only.
 */
export * from './backend.ts'
export * from './chat-template.ts'
export * from './errors.ts'
export * from './tokenizer.ts'
