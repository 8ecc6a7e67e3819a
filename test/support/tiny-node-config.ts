import type { NodeConfig, RunDir } from '../../actors/index.ts'
import {
  builtinTaskCatalog,
  defineRecipe,
  nodeConfigOf,
  type RecipeInput,
  resolveTasks,
} from '../../recipes/index.ts'

/**
 * What a test changes in the tiny recipe: a section given (`model`, `sft`, `rl`, `pipeline`,
 * `triad`, ...) has its fields replace the tiny recipe's, its other fields stay; `tasks` replaces
 * the whole mix; `budget.maxSteps` is the learner's step budget (default 2).
 */
export type TinyRecipeChanges = Partial<RecipeInput>

/**
 * The recipe of a tiny run: a 1-layer width-16 model, calc at level 1 (levels 1-3), no SFT (no
 * expert episodes), byte tokenizer, groups of 2, 1-2 groups per step, one fresh engine and no stale
 * one, a checkpoint every step, no periodic evaluation, no overlong shaping; `changes` applied.
 */
function tinyRecipe(changes: TinyRecipeChanges = {}): RecipeInput {
  const tiny: RecipeInput = {
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
    triad: {},
    evaluation: { every: 0 },
    checkpoints: { every: 1 },
  }
  const section = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v)
  const merged: Record<string, unknown> = { ...tiny }
  for (const [key, value] of Object.entries(changes)) {
    const base = merged[key]
    merged[key] = section(base) && section(value) ? { ...(base as object), ...(value as object) } : value
  }
  return merged as RecipeInput
}

/**
 * The node config of a tiny run for actor-level tests: `nodeConfigOf` of the tiny recipe with
 * `changes` (see `TinyRecipeChanges`), for the run `run` in `runDir`, one env worker and every
 * checkpoint kept. Without a `triad` change there is no triad block (every part off, as a node
 * config without one reads); a recipe cannot say either, so both are set on the config after.
 */
export function tinyNodeConfig(run: string, runDir: string, changes: TinyRecipeChanges = {}): NodeConfig {
  const recipe = resolveTasks(defineRecipe(tinyRecipe(changes)), builtinTaskCatalog())
  const { triad, ...config } = nodeConfigOf(
    recipe,
    { id: run, path: runDir } as RunDir,
    changes.budget?.maxSteps ?? 2,
  )
  const { keepCheckpoints: _keep, ...pipeline } = config.pipeline
  return {
    ...config,
    pipeline: { ...pipeline, envWorkers: 1 },
    ...(changes.triad !== undefined ? { triad } : {}),
  }
}

/**
 * The triad section of a tiny recipe: difficulty decided every step (over the tasks' levels), step
 * rewards with m = 2 and no trust gate, the reward model trained whenever step rewards are on, no
 * reward-model cold start.
 */
export function tinyTriad(adaptiveTasks: boolean, stepRewards: boolean): NonNullable<RecipeInput['triad']> {
  return {
    adaptiveTasks,
    adaptEvery: 1,
    adaptHigh: 0.8,
    adaptLow: 0.2,
    stepReward: { enabled: stepRewards, lambda: 0.5, m: 2, minAccuracy: 0 },
    trainRewardModel: stepRewards,
    rewardModelSft: { enabled: false },
  }
}
