import type { NodeConfig, RunDir } from '../../actors/index.ts'
import type { NodeTriadConfig } from '../../actors/testing.ts'
import {
  builtinTaskCatalog,
  defineRecipe,
  nodeConfigOf,
  type RecipeInput,
  resolveTasks,
} from '../../recipes/index.ts'

/**
 * The recipe of a tiny run: a 1-layer width-16 model, calc at level 1 (levels 1-3), no SFT (no
 * expert episodes), byte tokenizer, groups of 2, 1-2 groups per step, one fresh engine and no stale
 * one, a checkpoint every step, no periodic evaluation, no overlong shaping. `triad` is the
 * recipe's triad block.
 */
function tinyRecipe(triad: RecipeInput['triad'] = {}): RecipeInput {
  return {
    name: 'tiny',
    seed: 1,
    tasks: [{ name: 'calc', difficulty: { start: 1, min: 1, max: 3 } }],
    model: { layers: 1, width: 16, heads: 2, contextLength: 256, merges: 0 },
    sft: {
      epochs: 1,
      batchSize: 1,
      lr: 1e-3,
      expertTrajectoriesPerTask: 0,
      expertErrorRate: 0,
      expertSuccessRate: 1,
    },
    rl: { groupSize: 2, lr: 1e-3, overlong: { enabled: false } },
    pipeline: {
      freshEngines: 1,
      staleEngines: 0,
      rho: 0,
      staleEvery: 1,
      stalenessBound: 8,
      minBatchGroups: 1,
      bufferGroups: 2,
      concurrency: 2,
      maxTurns: 2,
      maxNewTokens: 8,
    },
    triad,
    evaluation: { every: 0 },
    checkpoints: { every: 1 },
  }
}

/** `nodeConfigOf` of `recipe` for the run `run` in `runDir`, stopping after `maxSteps` steps. */
function configOf(recipe: RecipeInput, run: string, runDir: string, maxSteps: number): NodeConfig {
  return nodeConfigOf(
    resolveTasks(defineRecipe(recipe), builtinTaskCatalog()),
    { id: run, path: runDir } as RunDir,
    maxSteps,
  )
}

/**
 * The node config of a tiny run for actor-level tests (`tinyRecipe` through `nodeConfigOf`), 2
 * learner steps, one env worker, every checkpoint kept and no triad block (every part off).
 * `sft.batchTokens` is 256 (one trajectory per batch) for the tests that turn SFT on.
 * `overrides` replace whole top-level fields.
 */
export function tinyNodeConfig(run: string, runDir: string, overrides: Partial<NodeConfig> = {}): NodeConfig {
  const { triad: _triad, ...config } = configOf(tinyRecipe(), run, runDir, 2)
  const { keepCheckpoints: _keep, ...pipeline } = config.pipeline
  return {
    ...config,
    sft: { ...config.sft, batchTokens: 256 },
    pipeline: { ...pipeline, envWorkers: 1 },
    ...overrides,
  }
}

/**
 * The triad block of a tiny run (`nodeConfigOf`'s): difficulty decided every step over calc levels
 * 1-3, step rewards with m = 2 and no trust gate, the reward model trained whenever step rewards
 * are on, no reward-model cold start.
 */
export function tinyTriad(adaptiveTasks: boolean, stepRewards: boolean): NodeTriadConfig {
  const recipe = tinyRecipe({
    adaptiveTasks,
    adaptEvery: 1,
    adaptHigh: 0.8,
    adaptLow: 0.2,
    stepReward: { enabled: stepRewards, lambda: 0.5, m: 2, minAccuracy: 0 },
    trainRewardModel: stepRewards,
    rewardModelSft: { enabled: false },
  })
  return configOf(recipe, 'tiny', '/tmp/unused', 2).triad!
}
