/**
 * Ablation: the quickstart's setting (calc, sql and maze with the whole triad, the same model, SFT,
 * GRPO-TCR and pipeline) as the baseline of `triad ablate`, with a time budget of 6 minutes a run.
 * `triad ablate` makes the cold start (SFT and the reward model's) once per seed and copies it into
 * each variant's run, so those 6 minutes are the RL phase (after a start-up of some seconds); then
 * the final checkpoint is evaluated on the same 32 held-out instances per task as every other run.
 * The claims it checks, each one `--vary`, are in docs/ablations/README.md.
 *
 *   triad ablate recipes/ablation.ts --vary rl.eps_high=0.2 --seeds 3
 */
import { defineRecipe } from './define-recipe.ts'

export default defineRecipe({
  name: 'ablation',
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
    threads: 2,
    lr: 5e-3,
    expertTrajectoriesPerTask: 512,
    expertErrorRate: 0.05, // mistakes and recoveries (claim g compares 0: clean episodes only)
    expertSuccessRate: 1,
  },
  rl: {
    groupSize: 8,
    lr: 3e-4,
    eps_low: 0.2,
    eps_high: 0.28, // clip-higher (claim a compares 0.2)
    aggregation: 'token-mean', // claim b compares seq-mean-token-mean
    taskAdvantageNorm: true, // claim c compares false
    overlong: { L_max: 320, L_buf: 64 },
    dynamicSampling: true,
    kl: { beta: 0.1 },
    offPolicy: { name: 'none' }, // claim h compares decoupled, tis and icepop
  },
  pipeline: {
    mode: 'async',
    freshEngines: 1,
    staleEngines: 1,
    rho: 0.25, // cross-policy sampling (claim d compares 0)
    staleEvery: 10,
    minBatchGroups: 6,
    bufferGroups: 12,
    concurrency: 16,
    maxTurns: 6,
    maxNewTokens: 80,
  },
  triad: {
    adaptiveTasks: true, // claim f compares false
    stepReward: { enabled: true, lambda: 0.5, m: 3, judgeShare: 0.25 }, // claim e compares enabled false
    trainRewardModel: true,
    rewardModelBatch: 16,
    rewardModelSft: { steps: 100, heldOutTrajectoriesPerTask: 6 },
  },
  evaluation: { every: 0, k: 8, instancesPerTask: 32 },
  checkpoints: { every: 25, keep: 2 },
  budget: { maxSteps: 1000, maxMinutes: 6 },
})
