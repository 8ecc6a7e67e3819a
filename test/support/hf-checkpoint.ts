/**
 * The random Hugging Face checkpoint writer, under the names the tests use; it lives in
 * `gpu/hf-random-checkpoint.ts` (where `triad model tiny` reaches it too).
 */
export {
  type RandomHfArchitecture as TestArchitecture,
  type RandomHfModel as TestHfModel,
  type RandomHfSpec as TestHfSpec,
  writeRandomHfCheckpoint as writeHfCheckpoint,
} from '../../gpu/testing.ts'
