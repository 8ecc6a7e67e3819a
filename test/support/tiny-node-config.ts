import type { NodeConfig } from '../../actors/index.ts'
import type { NodeTriadConfig } from '../../actors/testing.ts'
import { RL_STEP_DEFAULTS } from '../../gpu/index.ts'

/**
 * The node config of a tiny run for actor-level tests: a 1-layer width-16 model, calc at level 1,
 * no SFT, byte tokenizer, 2 learner steps of 1-2 groups of 2, one fresh engine and one env worker.
 * `overrides` replace whole top-level fields.
 */
export function tinyNodeConfig(run: string, runDir: string, overrides: Partial<NodeConfig> = {}): NodeConfig {
  return {
    run,
    runDir,
    seed: 1,
    tokenizerMerges: 0,
    model: { layers: 1, width: 16, heads: 2, contextLength: 256 },
    tasks: [{ name: 'calc', weight: 1, difficulty: 1 }],
    sft: {
      enabled: false,
      expertTrajectoriesPerTask: 0,
      errorRate: 0,
      successRate: 1,
      epochs: 1,
      lr: 1e-3,
      batchTokens: 256,
    },
    rl: {
      groupSize: 2,
      lr: 1e-3,
      optimizer: { weightDecay: 0.01, gradClip: 1 },
      step: { ...RL_STEP_DEFAULTS },
    },
    pipeline: {
      mode: 'async',
      envWorkers: 1,
      freshEngines: 1,
      staleEngines: 0,
      rho: 0,
      staleEvery: 1,
      stalenessBound: 8,
      minBatchGroups: 1,
      maxBatchGroups: 2,
      bufferGroups: 2,
      concurrency: 2,
      maxTurns: 2,
      maxNewTokens: 8,
      temperature: 1,
      top_p: 1,
      checkpointEvery: 1,
    },
    maxSteps: 2,
    ...overrides,
  }
}

/**
 * The triad block of a tiny run: difficulty decided every step over calc levels 1-3, step rewards
 * with m = 2 and no trust gate, the reward model trained whenever step rewards are on.
 */
export function tinyTriad(adaptiveTasks: boolean, stepRewards: boolean): NodeTriadConfig {
  return {
    adaptiveTasks,
    adaptEvery: 1,
    adaptHigh: 0.8,
    adaptLow: 0.2,
    stepReward: { enabled: stepRewards, lambda: 0.5, m: 2, minAccuracy: 0 },
    trainRewardModel: stepRewards,
    levels: { calc: { min: 1, max: 3, default: 1 } },
  }
}
