import type { AdamWConfig, LoraConfig, RlStepConfig, TransformerConfig } from '../../gpu/index.ts'
import type { TaskLevels } from '../env-adapter/index.ts'
import type { RolloutSettings, TaskMixEntry } from '../rollout/index.ts'
import { runSeeds } from '../runtime/index.ts'
import type { RewardModelSftConfig, TriadSwitches } from '../triad/index.ts'
import type { SftDataset } from './sft-dataset.ts'

/** The dynamic triad of a run (RLAnything): its switches and the env adapter's settings. */
export interface NodeTriadConfig extends TriadSwitches {
  /**
   * Learner steps between difficulty decisions: the env adapter measures a task's accuracy over
   * windows of `adaptEvery * minBatchGroups * groupSize` episodes (one task level per task).
   */
  adaptEvery: number
  /** Accuracy at or above which a task gets harder. */
  adaptHigh: number
  /** Accuracy below which a task gets easier. */
  adaptLow: number
  /** Most judged steps per reward-model update (default 64). */
  rewardModelBatch?: number
  /** Level range of each task the adapter may move (`default` is the level the run starts at). */
  levels: Record<string, TaskLevels>
  /**
   * Cold-start SFT of the reward model on labelled steps of expert episodes, before RL (it runs
   * when enabled and step rewards or reward-model training are on); absent: none.
   */
  rewardModelSft?: RewardModelSftConfig
}

/** The AdamW settings a recipe gives (`rl.weightDecay`, `rl.gradClip`); the moments' betas keep their defaults. */
export type PolicyOptimizerConfig = Required<Pick<AdamWConfig, 'weightDecay' | 'gradClip'>>

/**
 * What every node of a run needs to know, resolved from the recipe by `triad run` and written to
 * the run directory as `node-config.json`; `triad worker --config FILE` reads it on any machine.
 */
export interface NodeConfig {
  /** Run id: subjects are `triad.<run>.*`. */
  run: string
  /** The run directory (checkpoints, metrics); must be shared by the learner's machine. */
  runDir: string
  /** Seed of everything random, split per role from here. */
  seed: number
  /** Compute backend to force (`wasm`, `cpu`, `tensorflow`...); the best available when absent. */
  backend?: string
  /**
   * Threads of the native engine's pool in each role's process (`chooseBackend`'s `threads`, 1 to
   * the cores of the machine running it), as the recipe gives them (`model.threads`). A role left
   * out is `auto`: `TRIAD_THREADS` of its process when set (the launcher sets it where both roles
   * share a machine, `roleThreadsEnv`), else every core of its machine.
   */
  threads?: { learner?: number; rollout?: number }
  /** Byte-pair merges learned from the expert corpus on top of the byte-level tokenizer (0: bytes only). */
  tokenizerMerges?: number
  /**
   * Policy model size (the vocabulary comes from the tokenizer). With `pretrained`, the sizes are
   * the pretrained model's and only `contextLength` is read: the rest of its config comes from its
   * `config.json`.
   */
  model: Omit<TransformerConfig, 'vocabSize'>
  /**
   * A pretrained policy: a Hugging Face model directory (absolute path; it must be readable on every
   * machine that runs the learner or the policy engines), trained through LoRA adapters. Its own
   * tokenizer and Jinja chat template replace the run's tokenizer; the weight versions sent to the
   * engines and the checkpoints hold the adapters alone. Absent: triad's own model from scratch.
   */
  pretrained?: { dir: string; lora: LoraConfig }
  tasks: TaskMixEntry[]
  /** Cold-start SFT on expert trajectories (DemyAgent), before RL. */
  sft: {
    enabled: boolean
    /** Expert episodes per task: the SFT data (the tokenizer may learn from more, see `learner-node.ts`). */
    expertTrajectoriesPerTask: number
    /** Per-step probability of an expert mistake it then recovers from. */
    errorRate: number
    /** Share of expert episodes that end solved. */
    successRate: number
    epochs: number
    lr: number
    /** Most padded input tokens per optimizer step (steps are packed by tokens, `makeBatches`). */
    batchTokens: number
    /** Stop after this many optimizer steps even if epochs remain (absent: no limit). */
    maxSteps?: number
    /** Threads computing gradients at once (data-parallel steps, `SftWorkers`); absent: 1. */
    threads?: number
    /** Whether the scripted experts' episodes are SFT data (absent: true); false: the datasets alone. */
    experts?: boolean
    /** Datasets of OpenAI chat conversations trained on with (or instead of) the experts (absolute paths). */
    datasets?: SftDataset[]
  }
  rl: {
    /** G: samples per task instance. */
    groupSize: number
    /** AdamW learning rate of the policy, and of the reward model's consistency training. */
    lr: number
    /**
     * AdamW settings of the policy (decoupled weight decay, global grad-norm clip), and of the
     * reward model's consistency training: the `Learner`'s and the `RewardModelLearner`'s optimizer.
     */
    optimizer: PolicyOptimizerConfig
    /** GRPO-TCR settings, every one given (the recipe's, or `RL_STEP_DEFAULTS`). */
    step: RlStepConfig
  }
  pipeline: {
    mode: 'async' | 'sync'
    /** Env workers started in the rollout process (default 1); more can join with `triad worker --role env`. */
    envWorkers?: number
    freshEngines: number
    staleEngines: number
    /** Probability a turn goes to a stale engine (AgentRL cross-policy sampling). */
    rho: number
    /** Stale engines take new weights every this many learner steps. */
    staleEvery: number
    /** Groups more than this many versions behind are dropped. */
    stalenessBound: number
    /** Least groups per learner step (async); exactly this many in sync mode. */
    minBatchGroups: number
    /** Most groups per learner step (async). */
    maxBatchGroups: number
    /** Buffer bound of the trajectory stream, groups. */
    bufferGroups: number
    /** Agent loops in flight. */
    concurrency: number
    maxTurns: number
    maxNewTokens: number
    temperature: number
    top_p: number
    checkpointEvery: number
    /** Step checkpoints kept; older ones are deleted (never `sft/` nor the latest). Absent: all. */
    keepCheckpoints?: number
    /** Also checkpoint every this many learner steps, for the run's periodic evaluation (0: none). */
    evaluationEvery?: number
  }
  /** Stop after this many learner steps. */
  maxSteps: number
  /** Dynamic triad switches; absent: every part off (outcome-reward GRPO on fixed tasks). */
  triad?: NodeTriadConfig
}

/** Attempts of an episode whose environment session failed before it counts as failed. */
export const ROLLOUT_ATTEMPTS = 3

/**
 * The rollout driver's settings of a run: the task mix, G, the agent loops in flight, and each
 * episode's turn and token limits and sampling (temperature, top-p) from `pipeline`.
 * @param judged whether a step judge annotates episodes (the share comes from `triad.stepReward.judgeShare`).
 */
export function rolloutSettingsOf(config: NodeConfig, judged: boolean): RolloutSettings {
  const p = config.pipeline
  return {
    tasks: config.tasks,
    groupSize: config.rl.groupSize,
    concurrency: p.concurrency,
    attempts: ROLLOUT_ATTEMPTS,
    seed: runSeeds(config.seed).rollout,
    ...(judged ? { annotateShare: config.triad?.stepReward.judgeShare ?? 1 } : {}),
    episode: {
      maxTurns: p.maxTurns,
      maxNewTokens: p.maxNewTokens,
      contextLength: config.model.contextLength,
      temperature: p.temperature,
      top_p: p.top_p,
    },
  }
}

/**
 * What the learner node builds its `Learner` with (`LearnerOptions`) besides the model, tokenizer, version and KL
 * reference: the learning rate, the GRPO-TCR step settings and the AdamW settings (the
 * `RewardModelLearner` takes the same `optimizer`).
 */
export function learnerSettingsOf(config: NodeConfig): {
  lr: number
  rl: RlStepConfig
  optimizer: PolicyOptimizerConfig
} {
  return { lr: config.rl.lr, rl: config.rl.step, optimizer: config.rl.optimizer }
}
