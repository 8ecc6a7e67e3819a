/**
 * Quickstart: calc, sql and maze with the whole triad, sized for two CPU cores. Cold-start SFT on
 * expert trajectories (with mistakes and recoveries), then GRPO-TCR with cross-policy sampling,
 * step rewards from a reward model trained alongside, and adaptive task difficulty.
 *
 *   triad run recipes/quickstart.ts
 */
import { defineRecipe } from './define-recipe.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The quickstart as written (recipes/ablation.ts starts from it). */
export const quickstartInput = {
  name: 'quickstart',
  seed: 1,
  tasks: [
    { name: 'calc', weight: 1 },
    { name: 'sql', weight: 1 },
    { name: 'maze', weight: 1 },
  ],
  model: { layers: 2, width: 128, heads: 4, contextLength: 512, merges: 512 },
  sft: {
    epochs: 6,
    batchSize: 2,
    threads: 2, // data-parallel over both cores: the rollout side idles during the cold start
    lr: 5e-3,
    expertTrajectoriesPerTask: 512,
    expertErrorRate: 0.05,
    expertSuccessRate: 1,
  },
  rl: {
    groupSize: 8,
    lr: 3e-4,
    overlong: { L_max: 320, L_buf: 64 },
    dynamicSampling: true,
    kl: { beta: 0.1 },
  },
  pipeline: {
    mode: 'async',
    freshEngines: 1,
    staleEngines: 1,
    rho: 0.25,
    staleEvery: 10,
    minBatchGroups: 6,
    bufferGroups: 12,
    concurrency: 16,
    maxTurns: 6,
    maxNewTokens: 80,
  },
  triad: {
    adaptiveTasks: true,
    stepReward: { enabled: true, lambda: 0.5, m: 3, judgeShare: 0.25 },
    trainRewardModel: true,
    rewardModelBatch: 16,
    rewardModelSft: { steps: 100, heldOutTrajectoriesPerTask: 6 },
  },
  evaluation: { every: 0, k: 8, instancesPerTask: 32 },
  checkpoints: { every: 25, keep: 2 },
  budget: { maxSteps: 400, maxMinutes: 16 },
} satisfies RecipeInput

export default defineRecipe(quickstartInput)
