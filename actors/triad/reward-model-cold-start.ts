import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type ChatFormat,
  ContinuousBatcher,
  readCheckpointWeights,
  type SftLogRecord,
  saveCheckpoint,
  type Tokenizer,
  type Transformer,
  withSftWorkers,
} from '../../gpu/index.ts'
import { type MetricValues, SessionStatus } from '../../protocols/index.ts'
import {
  type AnyTask,
  getTask,
  type PlayedEpisode,
  type PlayOptions,
  playEpisode,
  playExpert,
} from '../environment/index.ts'
import { ModelPolicy, playBounded } from '../evaluation/index.ts'
import { LearnerCheckpointError } from '../learner/index.ts'
import type { TaskMixEntry } from '../rollout/index.ts'
import { runSeeds } from '../runtime/index.ts'
import { episodeJudgeSteps } from './judge-prompt.ts'
import type { RewardModel } from './reward-model.ts'
import { sameRewardModel } from './reward-model-checkpoint.ts'
import { type LabelledStep, trainVerdictSft, type VerdictAccuracy, verdictAccuracy } from './verdict-sft.ts'

/**
 * The learner's side of the reward model's cold start (`trainVerdictSft`): labelled steps from
 * real expert episodes of the run's tasks (played with a higher error rate, so that there are bad
 * steps; each labelled by the environment's `step_good`), the SFT once per run, and its checkpoint
 * `checkpoints/reward-sft/`, so that a restarted or resumed learner loads it instead of training
 * again.
 */

/** The folder of the reward model's cold-start checkpoint under the run's `checkpoints/`. */
export const REWARD_MODEL_SFT_DIR = 'reward-sft'

/** Written last into `reward-sft/`: its presence marks a complete cold start. */
export const REWARD_MODEL_SFT_FILE = 'reward-sft.json'

/** Generator-seed bases of the cold start's training and held-out episodes (apart from the policy SFT's). */

/**
 * Every assistant step of `count` expert episodes per task of the run's mix with its `step_good`
 * label, as `LabelledStep`s (`episodeJudgeSteps`); episodes that ended in `task_error` give none.
 * Episode i of a task is seeded
 * `expert.seedOf(i)` (instance and expert mistakes; `runSeeds`).
 */
export function playLabelledSteps(
  config: Pick<ColdStartNodeConfig, 'seed' | 'tasks'>,
  count: number,
  expert: { errorRate: number; successRate: number; seedOf: (i: number) => number },
): Promise<LabelledStep[]> {
  return labelledStepsOf(config, count, expert.seedOf, 1, (task, options, seed) =>
    playExpert(task, options, { errorRate: expert.errorRate, successRate: expert.successRate, seed }),
  )
}

/** The policy whose own episodes the reward model's cold start also learns from. */
export interface ColdStartPolicy {
  /** The policy after its cold-start SFT (it is only read). */
  model: Transformer
  /** Its tokenizer (triad's ChatML template) or a pretrained model's `ChatFormat`. */
  tokenizer: Tokenizer | ChatFormat
  /** Sampling as in the run's rollouts: new tokens per turn, temperature and top-p. */
  sampling: { maxNewTokens: number; temperature: number; top_p: number }
}

/**
 * Every assistant step of `count` episodes per task that `policy` samples (all episodes at once
 * through one continuous batcher), each with its `step_good` label: the mistakes the policy itself
 * makes, which the scripted experts' mistakes do not cover (a judge cold-started on expert steps
 * alone scored a balanced accuracy of 0.85 on held-out expert steps and 0.66 on the quickstart
 * policy's steps). Episode i of a task plays the train instance seeded `seedOf(i)` and samples
 * with that seed; episodes that ended in `task_error` give none.
 */
export async function playPolicyLabelledSteps(
  config: Pick<ColdStartNodeConfig, 'seed' | 'tasks'>,
  count: number,
  policy: ColdStartPolicy,
  seedOf: (i: number) => number,
): Promise<LabelledStep[]> {
  const batcher = new ContinuousBatcher(policy.model, { maxBatch: 64 })
  try {
    return await labelledStepsOf(config, count, seedOf, Infinity, (task, options, seed) =>
      playEpisode(
        task,
        options,
        new ModelPolicy(batcher, policy.tokenizer, policy.model.config.contextLength, {
          ...policy.sampling,
          seed,
        }),
      ),
    )
  } finally {
    await batcher.close()
  }
}

/**
 * Plays `count` train episodes per task (episode i seeded `seedOf(i)`, at most `concurrency` at
 * once) and labels their assistant steps; the steps come task by task, episode by episode.
 */
async function labelledStepsOf(
  config: Pick<ColdStartNodeConfig, 'tasks'>,
  count: number,
  seedOf: (i: number) => number,
  concurrency: number,
  play: (task: AnyTask, options: PlayOptions, seed: number) => Promise<PlayedEpisode>,
): Promise<LabelledStep[]> {
  const jobs = config.tasks.flatMap((entry) =>
    Array.from({ length: count }, (_, i) => ({ entry, task: getTask(entry.name), seed: seedOf(i) })),
  )
  const episodes = await playBounded(jobs, concurrency, ({ entry, task, seed }) =>
    play(task, { difficulty: entry.difficulty, split: 'train', randomSeed: seed }, seed),
  )
  return episodes.flatMap((t, i) =>
    // An episode whose task failed labels the failure, not the task's steps: never SFT data.
    t.status === SessionStatus.TaskError
      ? []
      : episodeJudgeSteps(jobs[i]!.entry.name, t.messages).map((step, j) => ({
          step,
          good: (t.stepGood[j] ?? 0) > 0,
        })),
  )
}

/** What the cold start did (also the content of `reward-sft.json`). */
export interface RewardModelSftReport {
  /** Optimizer steps taken. */
  steps: number
  /** Loss on the verdict token of the last step (nats). */
  finalLoss: number
  /** Class-balanced training examples. */
  examples: number
  /** Labelled training steps before balancing: good and bad. */
  trainGood: number
  trainBad: number
  /** Greedy verdicts on the held-out steps (experts' and the policy's) before and after. */
  before: VerdictAccuracy
  after: VerdictAccuracy
  /** Labelled steps of the policy's own episodes among the training steps (before balancing). */
  policySteps: number
  /** Greedy verdicts after training on the held-out steps of the policy's own episodes alone (absent without them). */
  policyAfter?: VerdictAccuracy
  /** The same per task (a task whose held-out steps are of one class measures 0.5 at best). */
  policyAfterByTask?: Record<string, VerdictAccuracy>
  /** Wall time of the whole phase (playing, training, measuring), seconds. */
  seconds: number
}

/**
 * The metrics of a finished cold start:
 * - `reward_model/sft/steps`: optimizer steps; `reward_model/sft/final_loss`: last step's loss;
 * - `reward_model/sft/examples`: class-balanced training examples;
 * - `reward_model/sft/balanced_accuracy_before|after`: greedy verdicts on held-out steps, `(TPR+TNR)/2`;
 * - `reward_model/sft/unparseable_before|after`: share of those verdicts neither `+` nor `-`;
 * - `reward_model/sft/seconds`: wall time of the phase;
 * - `reward_model/sft/policy_steps`: labelled steps of the policy's own episodes trained on;
 * - `reward_model/sft/policy_balanced_accuracy_after`: greedy verdicts on held-out steps of the
 *   policy's own episodes after training (only when there are such steps), and
 *   `.../policy_balanced_accuracy_after/<task>` the same per task.
 */
export function rewardModelSftMetrics(r: RewardModelSftReport): MetricValues {
  return {
    'reward_model/sft/steps': r.steps,
    'reward_model/sft/final_loss': r.finalLoss,
    'reward_model/sft/examples': r.examples,
    'reward_model/sft/balanced_accuracy_before': r.before.balancedAccuracy,
    'reward_model/sft/balanced_accuracy_after': r.after.balancedAccuracy,
    'reward_model/sft/unparseable_before': r.before.unparseable,
    'reward_model/sft/unparseable_after': r.after.unparseable,
    'reward_model/sft/seconds': r.seconds,
    'reward_model/sft/policy_steps': r.policySteps,
    ...(r.policyAfter
      ? { 'reward_model/sft/policy_balanced_accuracy_after': r.policyAfter.balancedAccuracy }
      : {}),
    ...Object.fromEntries(
      Object.entries(r.policyAfterByTask ?? {}).map(([task, a]) => [
        `reward_model/sft/policy_balanced_accuracy_after/${task}`,
        a.balancedAccuracy,
      ]),
    ),
  }
}

/**
 * What the reward model's cold start reads of the node's config: the seed, the task mix, and the
 * SFT threads (`sft.threads`: its steps are data-parallel over that many threads, as the policy's).
 */
export interface ColdStartNodeConfig {
  /** The run's seed: the episodes' seeds come from it (`runSeeds`). */
  seed: number
  /** The run's task mix: whose episodes are played. */
  tasks: readonly TaskMixEntry[]
  /** Threads computing gradients at once (absent: 1). */
  sft?: { threads?: number }
}

/** The reward model's cold start (`rewardModelColdStart`): a recipe's `triad.rewardModelSft`. */
export interface RewardModelSftConfig {
  enabled: boolean
  /** Most optimizer steps. */
  steps: number
  /** Expert episodes per task whose steps are the training data. */
  expertTrajectoriesPerTask: number
  /**
   * Episodes per task the policy samples after its cold start (train instances, the run's
   * sampling) whose labelled steps are training data too: the policy's own mistakes. 0: none.
   */
  policyTrajectoriesPerTask: number
  /** Expert episodes per task (other seeds) whose steps measure accuracy before and after; as many policy episodes too when it plays. */
  heldOutTrajectoriesPerTask: number
  /** Per-step probability of an expert mistake (bad steps to learn from). */
  errorRate: number
  /** Share of expert episodes that end solved (the others end with a bad answer step). */
  successRate: number
  /** Peak learning rate. */
  lr: number
  /** Most padded tokens per batch. */
  batchTokens: number
  /** Initial weights: a copy of the policy's (`policy`), or the reward model's seed ones (`seed`). */
  init: 'policy' | 'seed'
}

/**
 * Plays the labelled steps and trains `rm` on them (`trainVerdictSft`); held-out episodes are
 * played apart (other seeds) for the before/after accuracy. With `policy` and
 * `sft.policyTrajectoriesPerTask` > 0, the policy's own sampled episodes add their labelled steps
 * to the training data, and `sft.heldOutTrajectoriesPerTask` more of them per task (other seeds) to
 * the held-out steps (measured alone too: `policyAfter`).
 * @param onLog every step's record and the step total (`reward_model/sft/loss` for progress views).
 * @throws ConfigError when the episodes hold no bad (or no good) step.
 */
export async function rewardModelColdStart(
  rm: RewardModel,
  config: ColdStartNodeConfig,
  sft: RewardModelSftConfig,
  onLog?: (record: SftLogRecord, totalSteps: number) => void,
  backend = 'wasm',
  policy?: ColdStartPolicy,
): Promise<RewardModelSftReport> {
  const start = performance.now()
  const threads = config.sft?.threads ?? 1
  const seeds = runSeeds(config.seed)
  const expert = { errorRate: sft.errorRate, successRate: sft.successRate }
  const expertTrain = await playLabelledSteps(config, sft.expertTrajectoriesPerTask, {
    ...expert,
    seedOf: seeds.rewardModelSftTrain,
  })
  const expertHeldOut = await playLabelledSteps(config, sft.heldOutTrajectoriesPerTask, {
    ...expert,
    seedOf: seeds.rewardModelSftHeldOut,
  })
  const own = policy && sft.policyTrajectoriesPerTask > 0
  const policyTrain = own
    ? await playPolicyLabelledSteps(
        config,
        sft.policyTrajectoriesPerTask,
        policy,
        seeds.rewardModelSftPolicyTrain,
      )
    : []
  const policyHeldOut = own
    ? await playPolicyLabelledSteps(
        config,
        sft.heldOutTrajectoriesPerTask,
        policy,
        seeds.rewardModelSftPolicyHeldOut,
      )
    : []
  const train = [...expertTrain, ...policyTrain]
  const heldOut = [...expertHeldOut, ...policyHeldOut]
  const r = await withSftWorkers(threads, rm.model.config, backend, (workers) =>
    trainVerdictSft(rm, train, heldOut, {
      steps: sft.steps,
      lr: sft.lr,
      batchTokens: sft.batchTokens,
      seed: config.seed,
      onLog,
      workers,
    }),
  )
  const trainGood = train.filter((s) => s.good).length
  const policyVerdicts =
    policyHeldOut.length > 0
      ? await rm.greedyVerdicts(rm.renderPrompts(policyHeldOut.map((s) => s.step)))
      : undefined
  const policyAfter = policyVerdicts
    ? verdictAccuracy(
        policyVerdicts,
        policyHeldOut.map((s) => s.good),
      )
    : undefined
  const policyAfterByTask = policyVerdicts
    ? Object.fromEntries(
        [...new Set(policyHeldOut.map((s) => s.step.task))].map((task) => {
          const at = policyHeldOut.flatMap((s, i) => (s.step.task === task ? [i] : []))
          return [
            task,
            verdictAccuracy(
              at.map((i) => policyVerdicts[i]!),
              at.map((i) => policyHeldOut[i]!.good),
            ),
          ]
        }),
      )
    : undefined
  return {
    steps: r.records.length,
    finalLoss: r.records.at(-1)?.loss ?? Number.NaN,
    examples: r.examples,
    trainGood,
    trainBad: train.length - trainGood,
    before: r.before,
    after: r.after,
    policySteps: policyTrain.length,
    ...(policyAfter ? { policyAfter } : {}),
    ...(policyAfterByTask ? { policyAfterByTask } : {}),
    seconds: (performance.now() - start) / 1000,
  }
}

/**
 * Writes the cold-started reward model into `dir` (`model.safetensors`, `config.json`,
 * `tokenizer.json`; a pretrained judge's adapters in PEFT layout instead, its tokenizer being the
 * base's), then `reward-sft.json` with the report, last.
 * @throws LearnerCheckpointError when writing fails.
 */
export async function saveRewardModelSft(
  dir: string,
  rm: RewardModel,
  report: RewardModelSftReport,
): Promise<void> {
  try {
    await mkdir(dir, { recursive: true })
    await saveCheckpoint(dir, rm.model, {
      tokenizer: rm.tokenizer,
      metadata: { role: 'reward-model', phase: 'sft' },
    })
    const file = join(dir, REWARD_MODEL_SFT_FILE)
    const tmp = `${file}.tmp-${process.pid}`
    await writeFile(tmp, `${JSON.stringify(report, null, 2)}\n`)
    await rename(tmp, file)
  } catch (err) {
    throw new LearnerCheckpointError(dir, `cannot write the reward model's SFT: ${(err as Error).message}`, {
      cause: err,
    })
  }
}

/**
 * Loads the cold-started weights of `dir` into `rm` (its version unchanged).
 * @returns the report, or undefined when `dir` holds no complete cold start (no `reward-sft.json`).
 * @throws LearnerCheckpointError for unreadable weights or weights of another model size.
 */
export async function loadRewardModelSft(
  dir: string,
  rm: RewardModel,
): Promise<RewardModelSftReport | undefined> {
  const file = join(dir, REWARD_MODEL_SFT_FILE)
  if (!existsSync(file)) return undefined
  try {
    const report = JSON.parse(await readFile(file, 'utf8')) as RewardModelSftReport
    const read = await readCheckpointWeights(dir)
    sameRewardModel(dir, read, rm.model)
    rm.loadWeights(read.weights, rm.version)
    return report
  } catch (err) {
    if (err instanceof LearnerCheckpointError) throw err
    throw new LearnerCheckpointError(dir, `cannot read the reward model's SFT: ${(err as Error).message}`, {
      cause: err,
    })
  }
}

/**
 * The cold start once per run: loads `checkpoints/reward-sft/` into `rm` when a complete one is
 * there, else trains (`rewardModelColdStart`) and saves it.
 * @returns the report and whether this call trained.
 */
export async function rewardModelColdStartOnce(
  rm: RewardModel,
  config: ColdStartNodeConfig,
  sft: RewardModelSftConfig,
  dir: string,
  onLog?: (record: SftLogRecord, totalSteps: number) => void,
  backend = 'wasm',
  policy?: ColdStartPolicy,
): Promise<{ report: RewardModelSftReport; trained: boolean }> {
  const loaded = await loadRewardModelSft(dir, rm)
  if (loaded) return { report: loaded, trained: false }
  const report = await rewardModelColdStart(rm, config, sft, onLog, backend, policy)
  await saveRewardModelSft(dir, rm, report)
  return { report, trained: true }
}
