/**
 * The schema of a triad recipe: every setting of a run, each with a one-line doc and its
 * default. Fields are named for their symbol in docs/design.md#algorithms where it gives one
 * (`eps_low`, `eps_high`, `c`, `L_max`, `L_buf`, `beta`, `rho`, `lambda`, `m`, and `top_p` as on
 * the `policy.generate` wire), camelCase otherwise. Every object is strict: an unknown field is
 * an error that lists the valid ones.
 */
import { z } from 'zod'
import {
  ADAMW_DEFAULTS,
  AdvantageEstimatorName,
  AggregationMode,
  BackendName,
  GRPO_TCR_DEFAULTS,
  KlEstimatorName,
  LoraTarget,
  OFF_POLICY_DEFAULTS,
  OffPolicyLevel,
  OffPolicyName,
  RL_STEP_DEFAULTS,
} from '../gpu/index.ts'

const int = (min: number) => z.number().int().min(min)
const positive = () => z.number().gt(0)
const probability = () => z.number().min(0).max(1)

/** A run name: one NATS subject token, because the run id derived from it is one. */
const RunName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/, "use letters, digits, '-' and '_' only (the run id is a NATS subject token)")

/**
 * Integer difficulty levels of one task. Missing values come from the task registry when the
 * recipe is checked against it (`resolveTasks`): `min`/`max` the task's range, `start` its default.
 */
export const DifficultySchema = z.strictObject({
  /** Level the run starts at (default: the task's default level). */
  start: z.number().int().optional(),
  /** Lowest level the env adapter may go to (default: the task's lowest). */
  min: z.number().int().optional(),
  /** Highest level the env adapter may go to (default: the task's highest). */
  max: z.number().int().optional(),
})

/**
 * An MCP server of a task (Model Context Protocol over stdio): triad starts `command args` and
 * lists its tools into the tool schemas the policy sees; the policy's calls of them go to it.
 */
export const McpServerSchema = z.strictObject({
  /** The program (`node`, `python3`, `npx`, a path). */
  command: z.string().min(1),
  /** Its arguments (default none). */
  args: z.array(z.string()).default([]),
  /** Variables added to its environment (default none). */
  env: z.record(z.string(), z.string()).default({}),
  /** `episode`: a fresh server per episode (the default); `pooled`: one server shared by the task's episodes. */
  lifetime: z.enum(['episode', 'pooled']).default('episode'),
  /** Most time a server may take to start or to answer one tool call, s (default 30); past it the episode fails. */
  timeoutS: positive().default(30),
})

/** One task of the task mix. */
export const TaskSchema = z
  .strictObject({
    /**
     * Task name: as the environment registry knows it (`calc`, `sql`, `maze`); for an `agent` or
     * `mcp` task, a name of its own (the trajectories' task, its metrics' key).
     */
    name: RunName,
    /** Sampling weight in the mix; probabilities are the weights over their sum (default 1). */
    weight: positive().default(1),
    /** Difficulty levels (see `DifficultySchema`). */
    difficulty: DifficultySchema.prefault({}),
    /**
     * An agent program that plays the task's episodes through the run's agent gateway (a `.ts`,
     * `.js`, `.py` file or an executable, relative to the working directory; see docs/gateway.md).
     * Absent: a built-in task.
     */
    agent: z.string().min(1).optional(),
    /**
     * MCP servers whose tools are the task's environment (triad's agent loop calls them; see
     * `McpServerSchema`). Needs `instances` and `reward`.
     */
    mcp: z.array(McpServerSchema).min(1).optional(),
    /**
     * The instances of an `agent` or `mcp` task: a count, or a JSONL file (one JSON object per
     * line; an `mcp` task's rows hold `messages` or `question`).
     */
    instances: z.union([int(1), z.string().min(1)]).optional(),
    /**
     * The held-out instances of an `agent` or `mcp` task, never trained on: a count or a JSONL
     * file like `instances`. The periodic and final evaluations play `0..n-1` of them
     * (`evaluation.instancesPerTask`, at most all of them), the agent's own program against the
     * evaluated checkpoint (docs/gateway.md#held-out-evaluation). Absent: the task is not evaluated.
     */
    evalInstances: z.union([int(1), z.string().min(1)]).optional(),
    /** Most episodes of an `agent` task running at once (default `pipeline.concurrency`). */
    concurrency: int(1).optional(),
    /** Time bound of one `agent` episode, from its start to its reward, s (default 300). */
    timeoutS: positive().optional(),
    /**
     * A module whose default export `(messages, instance) => number` rewards an episode over its
     * chat messages: an `mcp` task's (required), or an `agent`'s that exits without posting one.
     */
    reward: z.string().min(1).optional(),
  })
  .superRefine((t, ctx) => {
    if (t.agent !== undefined && t.mcp !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['mcp'],
        message: 'a task is an agent task or an MCP task, not both',
      })
    if ((t.agent !== undefined || t.mcp !== undefined) && t.instances === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['instances'],
        message: 'an agent or MCP task needs its instances (a count or a JSONL file)',
      })
    if (t.mcp !== undefined && t.reward === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['reward'],
        message: 'an MCP task needs a reward function module',
      })
    if (t.agent === undefined && t.mcp === undefined)
      for (const k of ['instances', 'evalInstances', 'concurrency', 'timeoutS', 'reward'] as const)
        if (t[k] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [k],
            message: `${k} is for agent and MCP tasks (set agent or mcp)`,
          })
  })

/**
 * LoRA adapters (Hu et al. 2021) on a pretrained policy (`model.hf`): the pretrained weights stay
 * frozen, the adapters alone are trained, checkpointed (PEFT's `adapter_model.safetensors` and
 * `adapter_config.json`) and published to the policy engines as weight versions.
 */
export const LoraSchema = z.strictObject({
  /** `r`: inner size of every adapter (default 8). */
  rank: int(1).default(8),
  /** `alpha`: the update is scaled by `alpha / rank` (default `2 * rank`). */
  alpha: positive().optional(),
  /** Projections with an adapter (default all seven: q, k, v, o, gate, up, down). */
  targets: z
    .array(z.enum(Object.values(LoraTarget) as [LoraTarget, ...LoraTarget[]]))
    .min(1)
    .optional(),
  /** Dropout probability on an adapter's input while training, in [0, 1) (default 0). */
  dropout: z.number().min(0).lt(1).default(0),
})

/** A role's native-engine threads: 1 to its machine's cores, or `auto`. */
const RoleThreads = z.union([z.literal('auto'), int(1)])

/**
 * Threads of the native engine's pool (`chooseBackend`'s `threads`) in the learner's and in the
 * rollout's process; the other backends do not take it. `auto` (the default): every core of the
 * machine when the role runs alone there; where `triad run` starts both roles as two processes on
 * its machine, they split its cores (the learner `ceil(cores / 2)`, the rollout the rest, at least
 * 1 each); with both in one process (`--in-process`) they share one pool of every core (or of the
 * larger count given). A count above the cores of the machine that runs the role is refused when
 * the run starts. `TRIAD_THREADS` sets it for a process where the recipe says `auto`.
 */
export const ThreadsSchema = z.strictObject({
  /** The learner's process (default `auto`). */
  learner: RoleThreads.default('auto'),
  /** The rollout's process: policy engines, reward model (default `auto`). */
  rollout: RoleThreads.default('auto'),
})

/** The policy model (a decoder-only transformer; docs/design.md#the-policy-model). */
export const ModelSchema = z.strictObject({
  /**
   * A pretrained policy: a Hugging Face model directory (Qwen3, Qwen2/Qwen2.5, Llama; path relative
   * to the working directory). Its own tokenizer and Jinja chat template are used (no tokenizer is
   * learned); `layers`, `width`, `heads` and `merges` come from the model and may not be given;
   * `lora` is required. Default: none (triad's own model, trained from scratch).
   */
  hf: z.string().min(1).optional(),
  /** LoRA adapters on the pretrained policy (`hf`); required with it, refused without it. */
  lora: LoraSchema.optional(),
  /** Transformer blocks (default 2). */
  layers: int(1).default(2),
  /** Model width (embedding size); a multiple of `heads` with an even head size (default 128). */
  width: int(2).default(128),
  /** Attention heads (default 4). */
  heads: int(1).default(4),
  /** Longest sequence, tokens: prompt, every turn and tool result (default 1024). */
  contextLength: int(16).default(1024),
  /**
   * Byte-pair merges learned from the expert corpus on top of the byte-level tokenizer (default
   * 512: about 3 times fewer tokens per trajectory; 0 keeps bytes only).
   */
  merges: int(0).default(512),
  /** Tensor backend: `auto` picks the best available (native, tfjs-node-gpu, tfjs-node, wasm, cpu). */
  backend: z.enum({ Auto: 'auto', ...BackendName }).default('auto'),
  /** Threads of the native engine in each role's process (see `ThreadsSchema`). */
  threads: ThreadsSchema.prefault({}),
})

/** Cold-start SFT on expert trajectories that keep mistakes and recoveries (DemyAgent). */
export const SftSchema = z.strictObject({
  /** Passes over the expert trajectories; 0 skips SFT (default 2). */
  epochs: int(0).default(2),
  /** Stop after this many optimizer steps even if epochs remain (default: no limit). */
  steps: int(1).optional(),
  /**
   * Fewest trajectories per optimizer step (default 16): steps are packed by tokens, each holds at
   * most `batchSize * model.contextLength` padded tokens, so shorter trajectories share a step.
   */
  batchSize: int(1).default(16),
  /**
   * Threads computing SFT gradients at once (data parallelism: each optimizer step takes one batch
   * per thread, so an epoch has that many times fewer, larger steps). For backends that compute on
   * one core (wasm, cpu): set it to the free cores of the learner's machine (default 1).
   */
  threads: int(1).default(1),
  /** AdamW learning rate (default 3e-4). */
  lr: positive().default(3e-4),
  /** Expert trajectories per task the SFT trains on (default 64). */
  expertTrajectoriesPerTask: int(0).default(64),
  /** Probability that the scripted expert makes a mistake at a step and then recovers (default 0.2). */
  expertErrorRate: z.number().min(0).lt(1).default(0.2),
  /**
   * Share of expert trajectories that end solved; the others end in a scripted failure (a
   * misread or forgotten value), as real trajectories sometimes do (default 0.9).
   */
  expertSuccessRate: z.number().gt(0).max(1).default(0.9),
  /**
   * Train on the scripted experts' episodes (default true); false: on `datasets` alone (the run's
   * tokenizer still learns its merges from expert episodes).
   */
  experts: z.boolean().default(true),
  /**
   * Datasets of OpenAI chat conversations with tool calls, one `{"messages": [...], "tools": [...]}`
   * per row (DemyAgent's and verl's multi-turn SFT sets; `triad trajectories` writes them), rendered
   * like the expert episodes and trained on with them. `path` relative to the working directory;
   * `format` from the extension (`.jsonl`, `.parquet`) when absent. Every row is checked before the
   * SFT starts; one bad row fails the run naming the file, row and field (default []).
   */
  datasets: z
    .array(z.strictObject({ path: z.string().min(1), format: z.enum(['jsonl', 'parquet']).optional() }))
    .default([]),
})

/** `L_max` when a recipe gives none and `model.contextLength` is at least this long, tokens. */
export const DEFAULT_L_MAX = 768
/** `L_buf` when a recipe gives none and `L_max / 4` is at least this long, tokens. */
export const DEFAULT_L_BUF = 192

/**
 * Overlong reward shaping (DAPO eq. 13, used by GRPO-TCR). A response never outgrows the context,
 * so `L_max` must be <= `model.contextLength` (a larger one could never give its -1).
 */
export const OverlongSchema = z.strictObject({
  /** Apply the shaping (default true). */
  enabled: z.boolean().default(true),
  /**
   * `L_max`: longest response, tokens; beyond it the penalty is -1; at most `model.contextLength`
   * (default 768, or `model.contextLength` when that is shorter).
   */
  L_max: int(1).default(DEFAULT_L_MAX),
  /**
   * `L_buf`: soft buffer before `L_max`, tokens, where the penalty grows linearly (default 192, or
   * `L_max / 4` rounded down when that is shorter).
   */
  L_buf: int(1).default(DEFAULT_L_BUF),
})

/** KL penalty to the reference (SFT) policy. */
export const KlSchema = z.strictObject({
  /** `beta`: coefficient of the KL term; 0 turns it off (default 0). */
  beta: z.number().min(0).default(RL_STEP_DEFAULTS.beta),
  /** Estimator of the per-token KL (default `k3`). */
  estimator: z.enum(KlEstimatorName).default(RL_STEP_DEFAULTS.klEstimator),
})

/**
 * Off-policy correction for stale tokens (`gpu/off-policy.ts`). Every correction but `none` takes
 * the PPO ratio against the proximal policy (the learner's weights at the start of the step: one
 * more forward pass per step, no gradient) and weights the token loss by
 * `w = exp(logp_prox - logp_behavior)`.
 */
export const OffPolicySchema = z.strictObject({
  /**
   * `none` (ratio against the behavior policy; default), `decoupled` (AReaL decoupled PPO, loss
   * times `min(w, cap)`), `tis` (truncated importance sampling, `min(w, cap)` per `level`),
   * `icepop` (tokens whose `w` leaves `[low, high]` are masked out).
   */
  name: z.enum(OffPolicyName).default(OFF_POLICY_DEFAULTS.name),
  /** Truncation of the importance weight for `decoupled` and `tis`, >= 1 (default 2). */
  cap: z.number().min(1).default(OFF_POLICY_DEFAULTS.cap),
  /** Lower edge of the `icepop` band, in (0, 1) (default 0.5). */
  low: z.number().gt(0).lt(1).default(OFF_POLICY_DEFAULTS.low),
  /** Upper edge of the `icepop` band, > 1 (default 5). */
  high: z.number().gt(1).default(OFF_POLICY_DEFAULTS.high),
  /** `tis` weight per `token` or per `sequence` (default `token`). */
  level: z.enum(OffPolicyLevel).default(OFF_POLICY_DEFAULTS.level),
})

/** RL with GRPO-TCR (DemyAgent) and task advantage normalization (AgentRL). */
export const RlSchema = z.strictObject({
  /** `G`: samples per task instance; the group the advantage is normalized over (default 8). */
  groupSize: int(2).default(8),
  /** Group advantage estimator (default `grpo`: `(R - mean) / (std + 1e-6)`). */
  advantage: z.enum(AdvantageEstimatorName).default(RL_STEP_DEFAULTS.advantage),
  /** `eps_low`: lower clip of the ratio, `1 - eps_low` (default 0.2). */
  eps_low: z.number().gt(0).lt(1).default(GRPO_TCR_DEFAULTS.eps_low),
  /** `eps_high`: upper clip of the ratio, `1 + eps_high` (clip-higher; default 0.28). */
  eps_high: positive().default(GRPO_TCR_DEFAULTS.eps_high),
  /** `c`: dual clip for negative advantages, the loss is at most `c * |A|` (default 10). */
  c: z.number().gt(1).default(GRPO_TCR_DEFAULTS.c),
  /** Loss aggregation (default `token-mean` over every masked token of the batch). */
  aggregation: z.enum(AggregationMode).default(GRPO_TCR_DEFAULTS.aggregation),
  /** Overlong reward shaping (`L_max`, `L_buf`). */
  overlong: OverlongSchema.prefault({}),
  /** KL to the reference policy (`beta` 0 = off, estimator `k3`). */
  kl: KlSchema.prefault({}),
  /** Entropy bonus coefficient: the loss subtracts `entropyCoef * entropy` (default 0). */
  entropyCoef: z.number().min(0).default(RL_STEP_DEFAULTS.entropyCoef),
  /**
   * AdamW learning rate (default 1e-4). `lr`, `weightDecay` and `gradClip` set the policy's AdamW
   * and the reward model's in its consistency training (the cold starts keep their own `lr` and
   * AdamW's defaults, weight decay 0.01 and clip 1.0).
   */
  lr: positive().default(1e-4),
  /** AdamW decoupled weight decay (Loshchilov & Hutter 2019; default 0.01). */
  weightDecay: z.number().min(0).default(ADAMW_DEFAULTS.weightDecay),
  /** Global gradient-norm clip: gradients are scaled to at most this L2 norm (default 1.0). */
  gradClip: positive().default(ADAMW_DEFAULTS.gradClip),
  /** Task advantage normalization after the group normalization (AgentRL; default on). */
  taskAdvantageNorm: z.boolean().default(RL_STEP_DEFAULTS.taskAdvantageNorm),
  /**
   * Dynamic sampling (DAPO): groups whose samples all got the same reward (zero advantage) are
   * left out of the update instead of diluting the token mean (default false).
   */
  dynamicSampling: z.boolean().default(false),
  /** Off-policy correction for stale tokens (default `none`; see `OffPolicySchema`). */
  offPolicy: OffPolicySchema.prefault({}),
})

const PipelineObject = z.strictObject({
  /** `async` (AgentRL: rollout and training overlap) or `sync` (generate all, then train). */
  mode: z.enum(['async', 'sync']).default('async'),
  /** Fresh policy engines: new weights after every learner step (default 1). */
  freshEngines: int(1).default(1),
  /** Stale policy engines: new weights every `staleEvery` steps (default 1). */
  staleEngines: int(0).default(1),
  /** `rho`: probability that a turn's generate call goes to a stale engine (AgentRL; default 0.25). */
  rho: probability().default(0.25),
  /** Learner steps between weight updates of the stale engines (AgentRL ships 25; default 25). */
  staleEvery: int(1).default(25),
  /** Largest staleness (learner version minus behavior version) a trajectory may have (default `staleEvery + 4`). */
  stalenessBound: int(0).optional(),
  /** The learner takes a batch once this many whole groups are ready (default 4). */
  minBatchGroups: int(1).default(4),
  /** Bound of the trajectory buffer, in groups; producers wait when it is full (default 16). */
  bufferGroups: int(1).default(16),
  /** Agent loops (trajectories) in flight at once (default 16). */
  concurrency: int(1).default(16),
  /** Largest number of assistant turns in one trajectory (default 8). */
  maxTurns: int(1).default(8),
  /** Largest number of new tokens per assistant turn (default 96). */
  maxNewTokens: int(1).default(96),
  /** Sampling temperature (0 = greedy; default 1). */
  temperature: z.number().min(0).default(1),
  /** Nucleus sampling mass (default 1 = off). */
  top_p: z.number().gt(0).max(1).default(1),
})

/** Rollout pipeline and cross-policy sampling (AgentRL). */
export const PipelineSchema = PipelineObject.transform((p) => ({
  ...p,
  stalenessBound: p.stalenessBound ?? p.staleEvery + 4,
}))

/** Step-wise rewards from the reward model (RLAnything): `R_j = O + lambda * mean_l S_jl`. */
export const StepRewardSchema = z.strictObject({
  /** Add the reward model's step judgements to the outcome (default true). */
  enabled: z.boolean().default(true),
  /** `lambda`: weight of the mean step judgement against the outcome (default 0.5). */
  lambda: z.number().min(0).default(0.5),
  /** `m`: judgements of each step by the reward model (default 3). */
  m: int(1).default(3),
  /**
   * Trust gate: a learner batch uses step rewards only when the reward model's online balanced
   * accuracy against the tasks' step labels (over its newest 256 labelled judgements) reaches this;
   * otherwise outcome rewards alone (default 0.6; 0: off).
   */
  minAccuracy: probability().default(0.6),
  /**
   * Share of groups whose steps the reward model judges (a seeded draw per group); the others
   * train on outcomes alone and give the reward model no data. Judging costs about as much CPU
   * as generating the episodes (default 1: every group).
   */
  judgeShare: probability().default(1),
  /**
   * Temperature the reward model samples its m verdicts at (default 1). Lower makes the sampled
   * verdicts follow the judge's most likely one (its greedy accuracy is the limit) and agree more
   * often within a step (fewer steps with a consistency signal); its consistency updates take the
   * verdicts' log-probabilities at this temperature.
   */
  temperature: positive().default(1),
})

/**
 * Cold-start SFT of the reward model (runs once per run when step rewards are on): class-balanced
 * labelled steps of expert episodes (the environment's `step_good`), loss on the verdict token only.
 * A judge from random weights almost never answers `+` or `-`, so consistency training alone never
 * starts.
 */
export const RewardModelSftSchema = z.strictObject({
  /** Run the cold start (default true; it needs `stepReward.enabled`). */
  enabled: z.boolean().default(true),
  /** Optimizer steps (default 300; a random judge needs a few hundred to read the step). */
  steps: int(1).default(300),
  /** Sequences of `contextLength` padded tokens per optimizer step (default 1). */
  batchSize: int(1).default(1),
  /** AdamW peak learning rate (warm-up, then cosine; default 3e-3). */
  lr: positive().default(3e-3),
  /** Expert trajectories per task whose steps are the training data (default 128). */
  expertTrajectoriesPerTask: int(1).default(128),
  /**
   * Trajectories per task the policy samples after its cold-start SFT (train instances, the run's
   * sampling), whose labelled steps the reward model also trains on: the mistakes the policy
   * itself makes (default 64; 0: expert steps only).
   */
  policyTrajectoriesPerTask: int(0).default(64),
  /** Expert trajectories per task (other seeds) that measure accuracy before and after, and as many of the policy's when it plays (default 8). */
  heldOutTrajectoriesPerTask: int(1).default(8),
  /** Per-step probability of an expert mistake: the bad steps to learn from (default 0.3). */
  errorRate: z.number().gt(0).lt(1).default(0.3),
  /** Share of expert trajectories that end solved; the others end with a bad answer (default 0.8). */
  successRate: z.number().gt(0).max(1).default(0.8),
  /**
   * Initial weights: `policy` copies the policy's (after its cold start: a model that already reads
   * the episodes), `seed` starts from the reward model's own seed (default `policy`).
   */
  init: z.enum(['policy', 'seed']).default('policy'),
})

/** The dynamic triad switches (RLAnything). */
export const TriadSchema = z.strictObject({
  /** Make tasks harder or easier from the policy's measured accuracy (default true). */
  adaptiveTasks: z.boolean().default(true),
  /** Learner steps between difficulty decisions of the env adapter (default 10). */
  adaptEvery: int(1).default(10),
  /** Accuracy at or above which a task gets harder (default 0.8). */
  adaptHigh: probability().default(0.8),
  /** Accuracy below which a task gets easier (default 0.2). */
  adaptLow: probability().default(0.2),
  /** Step-wise rewards from the reward model. */
  stepReward: StepRewardSchema.prefault({}),
  /** Train the reward model by consistency on its own loss (default true; needs `stepReward.enabled`). */
  trainRewardModel: z.boolean().default(true),
  /**
   * Most judged steps one reward-model update trains on (the steps with disagreeing judgements
   * first; default 64). Each is a forward and backward pass over its judge prompt.
   */
  rewardModelBatch: int(1).default(64),
  /** Cold-start SFT of the reward model. */
  rewardModelSft: RewardModelSftSchema.prefault({}),
})

/** Periodic evaluation on the held-out split: avg@k and pass@k per task. */
export const EvaluationSchema = z.strictObject({
  /** Learner steps between evaluations; 0 evaluates only at the end (default 25). */
  every: int(0).default(25),
  /** `k`: samples per instance for avg@k and pass@k (default 8). */
  k: int(1).default(8),
  /**
   * Held-out instances per task at each evaluation: indices 0..n-1 of the task's eval split (the
   * instances whose key hashes into the held-out share; the run checks the task makes them; default 16).
   */
  instancesPerTask: int(1).default(16),
})

/** Checkpoints (`model.safetensors` + `config.json`) under the run's `checkpoints/`. */
export const CheckpointsSchema = z.strictObject({
  /** Learner steps between checkpoints; 0 saves only at the end (default 50). */
  every: int(0).default(50),
  /** Newest checkpoints to keep; older ones are deleted (default 3). */
  keep: int(1).default(3),
})

/** When the run stops: whichever limit comes first. */
export const BudgetSchema = z.strictObject({
  /** Largest number of RL learner steps (default 200 when `maxMinutes` is not set either). */
  maxSteps: int(1).optional(),
  /** Largest wall-clock time of the whole run, SFT included, minutes (default: no limit). */
  maxMinutes: positive().optional(),
})

/** The whole recipe as written by a user (before derived sizes). */
export const RecipeSchema = z.strictObject({
  /** Run name; the run directory is `runs/<name>-<timestamp>/` (default `triad`). */
  name: RunName.default('triad'),
  /** Seed of every random source of the run (default 0). */
  seed: int(0).default(0),
  /** The task mix (at least one task). */
  tasks: z.array(TaskSchema).min(1),
  /** The policy model. */
  model: ModelSchema.prefault({}),
  /** Cold-start SFT. */
  sft: SftSchema.prefault({}),
  /** GRPO-TCR settings. */
  rl: RlSchema.prefault({}),
  /** Rollout pipeline. */
  pipeline: PipelineSchema.prefault({}),
  /** Dynamic triad switches. */
  triad: TriadSchema.prefault({}),
  /** Evaluation schedule. */
  evaluation: EvaluationSchema.prefault({}),
  /** Checkpoint schedule. */
  checkpoints: CheckpointsSchema.prefault({}),
  /** Run budget (`maxSteps` and/or `maxMinutes`). */
  budget: BudgetSchema.prefault({}),
})

/** What a recipe file passes to `defineRecipe`: every field optional except `tasks`. */
export type RecipeInput = z.input<typeof RecipeSchema>
/** A parsed recipe with every default filled in (derived sizes not yet added). */
export type ParsedRecipe = z.output<typeof RecipeSchema>

/**
 * Recipe fields that were renamed, old path to new (`[]` for any list index). A recipe that uses
 * an old one gets an error naming the new one; a stored `recipe.json` of an older run is read with
 * the new names (`storedSettings` in `define-recipe.ts`), so such a run still resumes.
 */
export const RENAMED_FIELDS: Readonly<Record<string, string>> = Object.freeze({
  'rl.entropy': 'rl.entropyCoef',
})

/**
 * Fields a recipe may not spell so, by path (`[]` for any list index), with what to write instead:
 * the renamed fields (`RENAMED_FIELDS`), other spellings of a field's concept that the code or the
 * literature uses (`rl.eps_high` for `rl.eps_high`), and fields that were removed. `checkRecipe`
 * reports such a field with this line instead of "unknown field".
 */
export const RETIRED_FIELDS: Readonly<Record<string, string>> = Object.freeze({
  ...Object.fromEntries(Object.entries(RENAMED_FIELDS).map(([from, to]) => [from, `renamed to ${to}`])),
  ...Object.fromEntries(
    Object.entries({
      'rl.epsLow': 'rl.eps_low',
      'rl.epsHigh': 'rl.eps_high',
      'rl.dualClip': 'rl.c',
      'rl.klCoef': 'rl.kl.beta',
      'rl.kl.klCoef': 'rl.kl.beta',
      'rl.maxGradNorm': 'rl.gradClip',
      'rl.overlong.maxLength': 'rl.overlong.L_max',
      'rl.overlong.bufferLength': 'rl.overlong.L_buf',
      'pipeline.topP': 'pipeline.top_p',
      'pipeline.minGroups': 'pipeline.minBatchGroups',
    }).map(([other, field]) => [other, `the recipe spells it ${field}`]),
  ),
  'tasks[].evalSize':
    'removed: it changed nothing (the eval split is made by content, and evaluation.instancesPerTask says how many held-out instances are played)',
})
