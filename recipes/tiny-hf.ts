/**
 * Tiny on a pretrained model: the smallest run of a Hugging Face policy with LoRA adapters (SFT
 * through the model's own chat template, RL steps whose weight versions are the adapters alone,
 * evaluation of the SFT and the last checkpoint) and the whole dynamic triad on it: the reward
 * model is its own adapters on the same base, cold-started on labelled steps, judging every step
 * through the model's template and trained by consistency beside the policy. It runs on the tiny
 * random Qwen3-layout checkpoint (`gpu/hf-tiny-qwen3.ts`: Qwen3's layout, vocabulary, tokenizer and
 * chat template at width 16), which `triad model tiny` writes; it does not learn, and it is the
 * end-to-end test's recipe. The model directory is `models/tiny-qwen3`, or `TRIAD_TINY_HF_DIR`:
 *
 *   triad model tiny models/tiny-qwen3
 *   triad run recipes/tiny-hf.ts
 *
 *   triad model tiny /tmp/tiny-qwen3 && TRIAD_TINY_HF_DIR=/tmp/tiny-qwen3 triad run recipes/tiny-hf.ts
 */
import { defineRecipe } from './define-recipe.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The tiny pretrained recipe as written (tests start from it). */
export const tinyHfInput = {
  name: 'tiny-hf',
  seed: 0,
  tasks: [{ name: 'calc' }],
  model: {
    hf: process.env.TRIAD_TINY_HF_DIR ?? 'models/tiny-qwen3',
    lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] },
    contextLength: 512,
  },
  sft: { epochs: 1, batchSize: 1, expertTrajectoriesPerTask: 2 },
  rl: { groupSize: 2, overlong: { L_max: 64, L_buf: 16 } },
  pipeline: {
    freshEngines: 1,
    staleEngines: 0,
    rho: 0,
    minBatchGroups: 1,
    bufferGroups: 1,
    concurrency: 2,
    maxTurns: 1,
    maxNewTokens: 12,
  },
  triad: {
    adaptiveTasks: false,
    // The step rewards are used from the first step (no trust gate): the tiny model does not learn.
    stepReward: { enabled: true, m: 2, minAccuracy: 0 },
    trainRewardModel: true,
    rewardModelSft: {
      steps: 2,
      expertTrajectoriesPerTask: 4,
      policyTrajectoriesPerTask: 1,
      heldOutTrajectoriesPerTask: 1,
    },
  },
  evaluation: { every: 0, k: 1, instancesPerTask: 1 },
  checkpoints: { every: 1, keep: 1 },
  budget: { maxSteps: 2, maxMinutes: 10 },
} satisfies RecipeInput

export default defineRecipe(tinyHfInput)
