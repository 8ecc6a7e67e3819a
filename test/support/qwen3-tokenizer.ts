/** Qwen3's real tokenizer files, for the tests; they live in `gpu/qwen3-tokenizer-files.ts`. */
export { QWEN3_TOKENIZER_DIR } from '../../gpu/testing.ts'
