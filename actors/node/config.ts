import { z } from 'zod'
import {
  type AdamWConfig,
  AggregationMode,
  KlEstimatorName,
  type LoraConfig,
  LoraTarget,
  OffPolicyLevel,
  OffPolicyName,
  type RlStepConfig,
  type TransformerConfig,
} from '../../gpu/index.ts'
import type { TaskLevels } from '../env-adapter/index.ts'
import type { AgentTaskSpec, McpTaskSpec, RolloutSettings, TaskMixEntry } from '../rollout/index.ts'
import { runSeeds } from '../runtime/index.ts'
import type { RewardModelSftConfig, TriadSwitches } from '../triad/index.ts'
import { NodeConfigError } from './errors.ts'
import { type SftDataset, SftDatasetFormat } from './sft-dataset.ts'

/**
 * True when `A` and `B` are the same type (each assignable to the other): the schemas below that
 * stand for a type of another module are checked against it with `true satisfies Same<...>`, so
 * the two cannot drift apart.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

const count = () => z.number().int().nonnegative()
const real = () => z.number()

/** The policy model's size without the vocabulary (`TransformerConfig` of `gpu/`). */
const ModelSizeSchema = z.strictObject({
  layers: count(),
  width: count(),
  heads: count(),
  contextLength: count(),
  mlpHidden: count().optional(),
  ropeTheta: real().optional(),
  normEps: real().optional(),
  kvHeads: count().optional(),
  headDim: count().optional(),
  qkvBias: z.boolean().optional(),
  qkNorm: z.boolean().optional(),
  tiedEmbeddings: z.boolean().optional(),
  ropeScaling: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('none') }),
      z.strictObject({ type: z.literal('linear'), factor: real() }),
      z.strictObject({
        type: z.literal('llama3'),
        factor: real(),
        lowFreqFactor: real(),
        highFreqFactor: real(),
        originalContextLength: count(),
      }),
    ])
    .optional(),
})
true satisfies Same<z.output<typeof ModelSizeSchema>, Omit<TransformerConfig, 'vocabSize'>>

/** LoRA settings (`LoraConfig` of `gpu/`). */
const LoraSchema = z.strictObject({
  rank: count().optional(),
  alpha: real().optional(),
  targets: z.array(z.enum(LoraTarget)).readonly().optional(),
  dropout: real().optional(),
})
true satisfies Same<z.output<typeof LoraSchema>, LoraConfig>

/** An agent task's program and instances (`AgentTaskSpec` of `actors/rollout`). */
const AgentTaskSchema = z.strictObject({
  program: z.string(),
  instances: z.union([count(), z.string()]),
  concurrency: count(),
  timeoutS: real(),
  reward: z.string().optional(),
})
true satisfies Same<z.output<typeof AgentTaskSchema>, AgentTaskSpec>

/** An MCP task's servers, instances and reward (`McpTaskSpec` of `actors/rollout`). */
const McpTaskSchema = z.strictObject({
  servers: z.array(
    z.strictObject({
      command: z.string(),
      args: z.array(z.string()),
      env: z.record(z.string(), z.string()),
      lifetime: z.enum(['episode', 'pooled']),
      timeoutS: real(),
    }),
  ),
  instances: z.union([count(), z.string()]),
  reward: z.string(),
})
true satisfies Same<z.output<typeof McpTaskSchema>, McpTaskSpec>

/** One task of the mix (`TaskMixEntry` of `actors/rollout`). */
const TaskMixEntrySchema = z.strictObject({
  name: z.string(),
  weight: real(),
  difficulty: z.number().int().optional(),
  maxTurns: count().optional(),
  maxNewTokens: count().optional(),
  agent: AgentTaskSchema.optional(),
  mcp: McpTaskSchema.optional(),
})
true satisfies Same<z.output<typeof TaskMixEntrySchema>, TaskMixEntry>

/** One SFT dataset (`SftDataset`). */
const SftDatasetSchema = z.strictObject({ path: z.string(), format: z.enum(SftDatasetFormat).optional() })
true satisfies Same<z.output<typeof SftDatasetSchema>, SftDataset>

/** GRPO-TCR step settings, every one given (`RlStepConfig` of `gpu/`). */
const RlStepSchema = z.strictObject({
  advantage: z.string(),
  taskAdvantageNorm: z.boolean(),
  overlong: z.strictObject({ L_max: count(), L_buf: count() }).optional(),
  loss: z.strictObject({
    eps_low: real(),
    eps_high: real(),
    c: real(),
    aggregation: z.enum(AggregationMode),
  }),
  beta: real(),
  klEstimator: z.enum(KlEstimatorName),
  entropyCoef: real(),
  temperature: real(),
  microBatchTokens: count().optional(),
  dynamicSampling: z.boolean().optional(),
  offPolicy: z
    .strictObject({
      name: z.enum(OffPolicyName),
      cap: real(),
      low: real(),
      high: real(),
      level: z.enum(OffPolicyLevel),
    })
    .optional(),
})
true satisfies Same<z.output<typeof RlStepSchema>, RlStepConfig>

/** Level range of one task (`TaskLevels` of `actors/env-adapter`). */
const TaskLevelsSchema = z.strictObject({
  min: z.number().int(),
  max: z.number().int(),
  default: z.number().int(),
})
true satisfies Same<z.output<typeof TaskLevelsSchema>, TaskLevels>

/** The reward model's cold start (`RewardModelSftConfig` of `actors/triad`). */
const RewardModelSftSchema = z.strictObject({
  enabled: z.boolean(),
  steps: count(),
  expertTrajectoriesPerTask: count(),
  policyTrajectoriesPerTask: count(),
  heldOutTrajectoriesPerTask: count(),
  errorRate: real(),
  successRate: real(),
  lr: real(),
  batchTokens: count(),
  init: z.enum(['policy', 'seed']),
})
true satisfies Same<z.output<typeof RewardModelSftSchema>, RewardModelSftConfig>

/** The triad switches (`TriadSwitches` of `actors/triad`). */
const TriadSwitchesShape = {
  adaptiveTasks: z.boolean(),
  stepReward: z.strictObject({
    enabled: z.boolean(),
    lambda: real(),
    m: count(),
    minAccuracy: real(),
    judgeShare: real().optional(),
    temperature: real().optional(),
  }),
  trainRewardModel: z.boolean(),
}
true satisfies Same<z.output<z.ZodObject<typeof TriadSwitchesShape>>, TriadSwitches>

/** The dynamic triad of a run (RLAnything): its switches and the env adapter's settings. */
const NodeTriadSchema = z.strictObject({
  ...TriadSwitchesShape,
  /**
   * Learner steps between difficulty decisions: the env adapter measures a task's accuracy over
   * windows of `adaptEvery * minBatchGroups * groupSize` episodes (one task level per task).
   */
  adaptEvery: count(),
  /** Accuracy at or above which a task gets harder. */
  adaptHigh: real(),
  /** Accuracy below which a task gets easier. */
  adaptLow: real(),
  /** Most judged steps per reward-model update (default 64). */
  rewardModelBatch: count().optional(),
  /** Level range of each task the adapter may move (`default` is the level the run starts at). */
  levels: z.record(z.string(), TaskLevelsSchema),
  /**
   * Cold-start SFT of the reward model on labelled steps of expert episodes, before RL (it runs
   * when enabled and step rewards or reward-model training are on); absent: none.
   */
  rewardModelSft: RewardModelSftSchema.optional(),
})

/** The dynamic triad of a run (RLAnything): its switches and the env adapter's settings. */
export type NodeTriadConfig = z.output<typeof NodeTriadSchema>

/** The AdamW settings a recipe gives (`rl.weightDecay`, `rl.gradClip`); the moments' betas keep their defaults. */
export type PolicyOptimizerConfig = Required<Pick<AdamWConfig, 'weightDecay' | 'gradClip'>>

const PolicyOptimizerSchema = z.strictObject({ weightDecay: real(), gradClip: real() })
true satisfies Same<z.output<typeof PolicyOptimizerSchema>, PolicyOptimizerConfig>

/**
 * The schema of `NodeConfig`: what `triad run` writes as `node-config.json` and `triad worker`
 * reads back (`parseNodeConfig`). Every object is strict (an unknown field is refused); the
 * values are the resolved ones, so nothing has a default here.
 */
export const NodeConfigSchema = z.strictObject({
  /** Run id: subjects are `triad.<run>.*`. */
  run: z.string().min(1),
  /** The run directory (checkpoints, metrics); must be shared by the learner's machine. */
  runDir: z.string().min(1),
  /** Seed of everything random, split per role from here. */
  seed: z.number().int(),
  /** Compute backend to force (`wasm`, `cpu`, `tensorflow`...); the best available when absent. */
  backend: z.string().optional(),
  /**
   * Threads of the native engine's pool in each role's process (`chooseBackend`'s `threads`, 1 to
   * the cores of the machine running it), as the recipe gives them (`model.threads`). A role left
   * out is `auto`: `TRIAD_THREADS` of its process when set (the launcher sets it where both roles
   * share a machine, `roleThreadsEnv`), else every core of its machine.
   */
  threads: z.strictObject({ learner: count().optional(), rollout: count().optional() }).optional(),
  /** Byte-pair merges learned from the expert corpus on top of the byte-level tokenizer (0: bytes only). */
  tokenizerMerges: count().optional(),
  /**
   * Policy model size (the vocabulary comes from the tokenizer). With `pretrained`, the sizes are
   * the pretrained model's and only `contextLength` is read: the rest of its config comes from its
   * `config.json`.
   */
  model: ModelSizeSchema,
  /**
   * A pretrained policy: a Hugging Face model directory (absolute path; it must be readable on every
   * machine that runs the learner or the policy engines), trained through LoRA adapters. Its own
   * tokenizer and Jinja chat template replace the run's tokenizer; the weight versions sent to the
   * engines and the checkpoints hold the adapters alone. Absent: triad's own model from scratch.
   */
  pretrained: z.strictObject({ dir: z.string(), lora: LoraSchema }).optional(),
  tasks: z.array(TaskMixEntrySchema),
  /** Cold-start SFT on expert trajectories (DemyAgent), before RL. */
  sft: z.strictObject({
    enabled: z.boolean(),
    /** Expert episodes per task: the SFT data (the tokenizer may learn from more, see `learner-node.ts`). */
    expertTrajectoriesPerTask: count(),
    /** Per-step probability of an expert mistake it then recovers from. */
    errorRate: real(),
    /** Share of expert episodes that end solved. */
    successRate: real(),
    epochs: count(),
    lr: real(),
    /** Most padded input tokens per optimizer step (steps are packed by tokens, `makeBatches`). */
    batchTokens: count(),
    /** Stop after this many optimizer steps even if epochs remain (absent: no limit). */
    maxSteps: count().optional(),
    /** Threads computing gradients at once (data-parallel steps, `SftWorkers`); absent: 1. */
    threads: count().optional(),
    /** Whether the scripted experts' episodes are SFT data (absent: true); false: the datasets alone. */
    experts: z.boolean().optional(),
    /** Datasets of OpenAI chat conversations trained on with (or instead of) the experts (absolute paths). */
    datasets: z.array(SftDatasetSchema).optional(),
  }),
  rl: z.strictObject({
    /** G: samples per task instance. */
    groupSize: count(),
    /** AdamW learning rate of the policy, and of the reward model's consistency training. */
    lr: real(),
    /**
     * AdamW settings of the policy (decoupled weight decay, global grad-norm clip), and of the
     * reward model's consistency training: the `Learner`'s and the `RewardModelLearner`'s optimizer.
     */
    optimizer: PolicyOptimizerSchema,
    /** GRPO-TCR settings, every one given (the recipe's, or `RL_STEP_DEFAULTS`). */
    step: RlStepSchema,
  }),
  pipeline: z.strictObject({
    mode: z.enum(['async', 'sync']),
    /** Env workers started in the rollout process (default 1); more can join with `triad worker --role env`. */
    envWorkers: count().optional(),
    freshEngines: count(),
    staleEngines: count(),
    /** Probability a turn goes to a stale engine (AgentRL cross-policy sampling). */
    rho: real(),
    /** Stale engines take new weights every this many learner steps. */
    staleEvery: count(),
    /** Groups more than this many versions behind are dropped. */
    stalenessBound: count(),
    /** Least groups per learner step (async); exactly this many in sync mode. */
    minBatchGroups: count(),
    /** Most groups per learner step (async). */
    maxBatchGroups: count(),
    /** Buffer bound of the trajectory stream, groups. */
    bufferGroups: count(),
    /** Agent loops in flight. */
    concurrency: count(),
    maxTurns: count(),
    maxNewTokens: count(),
    temperature: real(),
    top_p: real(),
    checkpointEvery: count(),
    /** Step checkpoints kept; older ones are deleted (never `sft/` nor the latest). Absent: all. */
    keepCheckpoints: count().optional(),
    /** Also checkpoint every this many learner steps, for the run's periodic evaluation (0: none). */
    evaluationEvery: count().optional(),
  }),
  /** Stop after this many learner steps. */
  maxSteps: count(),
  /** Dynamic triad switches; absent: every part off (outcome-reward GRPO on fixed tasks). */
  triad: NodeTriadSchema.optional(),
})

/**
 * What every node of a run needs to know, resolved from the recipe by `triad run` and written to
 * the run directory as `node-config.json`; `triad worker --config FILE` reads it on any machine
 * (`parseNodeConfig`). The fields and their docs are `NodeConfigSchema`'s.
 */
export type NodeConfig = z.output<typeof NodeConfigSchema>

/**
 * Checks a value (a parsed `node-config.json`) as a node config.
 * @param file where the value came from, named in the error.
 * @throws NodeConfigError naming `file` and each bad or missing field (`rl.lr`, `pipeline.maxTurns`).
 */
export function parseNodeConfig(value: unknown, file: string): NodeConfig {
  const parsed = NodeConfigSchema.safeParse(value)
  if (parsed.success) return parsed.data
  throw new NodeConfigError(
    file,
    parsed.error.issues.map((i) => ({
      path: fieldPath(i.path),
      message:
        i.code === 'invalid_type' && valueAt(value, i.path) === undefined
          ? `missing (${i.expected})`
          : i.message,
    })),
  )
}

/** The value at `path` inside `value` (undefined where it has none). */
function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value
  for (const key of path)
    v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined
  return v
}

/** `tasks[0].weight` from a zod issue path (`(root)` for the value itself). */
function fieldPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p)
  return out || '(root)'
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
