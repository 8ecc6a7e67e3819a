/** The tiny Qwen3-layout checkpoint, for the tests; it lives in `gpu/hf-tiny-qwen3.ts` (`triad model tiny`). */
export { writeTinyQwen3 } from '../../gpu/index.ts'
export { QWEN3_VOCAB_ROWS } from '../../gpu/testing.ts'
