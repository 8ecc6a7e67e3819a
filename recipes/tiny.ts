/**
 * Tiny: the smallest run that exercises every actor (SFT, fresh and stale engines, reward model,
 * env adapter, evaluation, a checkpoint). For the end-to-end smoke test; it does not learn.
 *
 *   triad run recipes/tiny.ts
 */
import { defineRecipe } from './define-recipe.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The tiny recipe as written (tests start from it). */
export const tinyInput = {
  name: 'tiny',
  seed: 0,
  tasks: [{ name: 'calc' }, { name: 'maze' }],
  model: { layers: 1, width: 32, heads: 2, contextLength: 384 },
  sft: { epochs: 1, batchSize: 4, expertTrajectoriesPerTask: 4 },
  rl: { groupSize: 2, overlong: { L_max: 128, L_buf: 32 } },
  pipeline: {
    freshEngines: 1,
    staleEngines: 1,
    rho: 0.5,
    staleEvery: 1,
    minBatchGroups: 1,
    bufferGroups: 2,
    concurrency: 4,
    maxTurns: 2,
    maxNewTokens: 24,
  },
  triad: {
    adaptEvery: 1,
    stepReward: { m: 2 },
    rewardModelSft: {
      steps: 3,
      expertTrajectoriesPerTask: 4,
      policyTrajectoriesPerTask: 2,
      heldOutTrajectoriesPerTask: 1,
    },
  },
  evaluation: { every: 2, k: 2, instancesPerTask: 2 },
  checkpoints: { every: 2, keep: 1 },
  budget: { maxSteps: 3, maxMinutes: 1.5 },
} satisfies RecipeInput

export default defineRecipe(tinyInput)
