import {
  AdamW,
  ConfigError,
  createRng,
  type RenderedChat,
  type SftLogRecord,
  type SftWorkers,
  sftStepCount,
  shuffle,
  trainSft,
  type VerdictTokens,
  warmupCosine,
} from '../../gpu/index.ts'
import type { JudgeStep } from '../../protocols/index.ts'
import {
  type JudgeFormat,
  type JudgePromptOptions,
  renderJudgePrompt,
  verdictTokensOf,
} from './judge-prompt.ts'
import type { RewardModel } from './reward-model.ts'

/**
 * The reward model's cold start: supervised fine-tuning on labelled steps, so that the judge starts
 * out able to judge. A judge from random weights almost never emits `+` or `-` (every judgement is
 * unparseable, every consistency advantage 0), so the consistency training of RLAnything (arXiv
 * 2602.02488) has nothing to learn from; like the policy's cold start (DemyAgent), a short SFT on
 * real steps of expert episodes with the environment's `step_good` labels fixes that. Each example
 * is a step's judge prompt (`renderJudgePrompt`, exactly as the reward actor renders it) followed
 * by the verdict token of its label, with the loss on the verdict token only.
 */

/** A step to judge with its ground-truth label (the task's `step_good`). */
export interface LabelledStep {
  step: JudgeStep
  /** True when the environment labelled the step good (`step_good` 1). */
  good: boolean
}

/**
 * One SFT example: the step's judge prompt, then the verdict token of its label (`+` good, `-`
 * bad); the loss mask is 1 on the verdict token only.
 * @param format the judge's tokenizer or chat format (`RewardModel.format`).
 * @param maxPromptTokens the reward model's context length minus one (`RewardModel.maxPromptTokens`).
 * @param verdicts the verdict ids (`RewardModel.verdicts`); default `verdictTokensOf(format)`.
 * @returns ids and loss mask, both `[promptLen + 1]`.
 * @throws JudgePromptTooLongError when the prompt cannot fit; ConfigError when a verdict
 *   is not one token of the format's vocabulary.
 */
export function verdictSftExample(
  format: JudgeFormat,
  labelled: LabelledStep,
  maxPromptTokens: number,
  promptOptions: JudgePromptOptions = {},
  verdicts: VerdictTokens = verdictTokensOf(format),
): RenderedChat {
  const prompt = renderJudgePrompt(format, labelled.step, maxPromptTokens, 0, promptOptions)
  const ids = new Int32Array(prompt.length + 1)
  ids.set(prompt)
  ids[prompt.length] = labelled.good ? verdicts.good : verdicts.bad
  const lossMask = new Uint8Array(ids.length)
  lossMask[prompt.length] = 1
  return { ids, lossMask }
}

/**
 * Class balance over the task mix: every bad step and as many good ones (drawn without replacement,
 * seeded), or every good step and as many bad ones when bad steps are the majority; shuffled. Not
 * per task: in one run each of the ablation setting at seed 1 (30 RL steps, verdicts sampled at
 * temperature 0.3), a judge balanced within each task judged the online steps at a greedy balanced
 * accuracy of 0.635 (sql 0.569, calc 0.622, maze 0.678), one balanced over the mix at 0.734 (sql
 * 0.478, calc 0.759, maze 0.768).
 * @returns `2 * min(good, bad)` steps.
 */
export function balanceSteps(steps: readonly LabelledStep[], seed: number): LabelledStep[] {
  const rng = createRng(seed)
  const good = shuffle(
    steps.filter((s) => s.good),
    rng,
  )
  const bad = shuffle(
    steps.filter((s) => !s.good),
    rng,
  )
  const n = Math.min(good.length, bad.length)
  return shuffle([...bad.slice(0, n), ...good.slice(0, n)], rng)
}

/** Verdicts measured against labels. */
export interface VerdictAccuracy {
  /** Mean of the accuracy on good and on bad steps (0.5 for a constant verdict). */
  balancedAccuracy: number
  /** Share of good steps judged `+`. */
  goodAccuracy: number
  /** Share of bad steps judged `-`. */
  badAccuracy: number
  /** Share of verdicts that are neither `+` nor `-`. */
  unparseable: number
  /** Labelled steps measured. */
  steps: number
}

/**
 * Balanced accuracy of verdicts against labels: `(TPR + TNR) / 2`, where an unparseable verdict
 * (0) counts as wrong; a class with no step counts as accuracy 0 in the mean.
 * @param verdicts `[steps]`: +1, -1 or 0.
 * @param good `[steps]`: the labels.
 * @throws ConfigError when the lengths differ or there is no step.
 */
export function verdictAccuracy(verdicts: ArrayLike<number>, good: readonly boolean[]): VerdictAccuracy {
  if (verdicts.length !== good.length)
    throw new ConfigError('verdicts', verdicts.length, `expected one per label (${good.length})`)
  if (good.length === 0) throw new ConfigError('verdicts', 0, 'no labelled step to measure')
  let pos = 0
  let posRight = 0
  let neg = 0
  let negRight = 0
  let unparseable = 0
  good.forEach((g, i) => {
    const v = verdicts[i]
    if (v === 0) unparseable++
    if (g) {
      pos++
      if (v === 1) posRight++
    } else {
      neg++
      if (v === -1) negRight++
    }
  })
  const goodAccuracy = pos ? posRight / pos : 0
  const badAccuracy = neg ? negRight / neg : 0
  return {
    balancedAccuracy: (goodAccuracy + badAccuracy) / 2, // (TPR + TNR) / 2
    goodAccuracy,
    badAccuracy,
    unparseable: unparseable / good.length,
    steps: good.length,
  }
}

/** Settings of `trainVerdictSft`. */
export interface VerdictSftConfig {
  /** Most optimizer steps (epochs over the balanced set are repeated until reached). */
  steps: number
  /** Peak learning rate (warm-up over a tenth of the steps, then cosine). */
  lr: number
  /** Most padded tokens per batch (at least the context length). */
  batchTokens: number
  /** Seed of the balancing and of the batch order. */
  seed: number
  /** Called with each step's record and the number of steps. */
  onLog?: (record: SftLogRecord, totalSteps: number) => void
  /** Worker threads for data-parallel steps (each step takes one batch per thread); default none. */
  workers?: SftWorkers
}

/** What `trainVerdictSft` did. */
export interface VerdictSftResult {
  /** The loss curve (loss on the verdict token, nats). */
  records: SftLogRecord[]
  /** Training examples after class balance. */
  examples: number
  /** Greedy verdicts on the held-out steps before training. */
  before: VerdictAccuracy
  /** And after. */
  after: VerdictAccuracy
  /** Wall time of the training alone, ms. */
  trainMs: number
}

/**
 * Trains the reward model to emit its labels' verdicts: class-balanced examples (`balanceSteps`,
 * `verdictSftExample`, prompts rendered with the model's own prompt options), `trainSft` for at
 * most `steps` steps with its own AdamW, and the greedy verdicts (`RewardModel.greedyVerdicts`) on
 * the held-out steps measured before and after (`verdictAccuracy`).
 * @throws ConfigError when there is no bad or no good step to train on, no held-out
 *   step, or `steps` is not a positive integer.
 */
export async function trainVerdictSft(
  rm: RewardModel,
  train: readonly LabelledStep[],
  heldOut: readonly LabelledStep[],
  config: VerdictSftConfig,
): Promise<VerdictSftResult> {
  if (!(Number.isInteger(config.steps) && config.steps > 0))
    throw new ConfigError('steps', config.steps, 'must be a positive integer')
  const balanced = balanceSteps(train, config.seed)
  if (balanced.length === 0)
    throw new ConfigError(
      'train',
      train.length,
      'needs good and bad labelled steps (a higher expert error rate makes bad ones)',
    )
  if (heldOut.length === 0) throw new ConfigError('heldOut', 0, 'needs held-out labelled steps')
  const measure = async () =>
    verdictAccuracy(
      await rm.greedyVerdicts(rm.renderPrompts(heldOut.map((s) => s.step))),
      heldOut.map((s) => s.good),
    )
  const before = await measure()
  const examples = balanced.map((s) =>
    verdictSftExample(rm.format, s, rm.maxPromptTokens, rm.promptOptions, rm.verdicts),
  )
  // passes over the data: enough for `config.steps` optimizer steps (trainSft stops at maxSteps)
  // One batching for the count and the training, so the predicted steps are the steps taken.
  const batching = { batchTokens: config.batchTokens, workers: config.workers }
  const perEpoch = sftStepCount(examples, rm.model, batching)
  const epochs = Math.ceil(config.steps / perEpoch)
  const optimizer = new AdamW(rm.model.params)
  const start = performance.now()
  let records: SftLogRecord[]
  try {
    records = await trainSft(rm.model, optimizer, examples, {
      ...batching,
      epochs,
      maxSteps: config.steps,
      scheduleFor: (steps) =>
        warmupCosine({
          peakLr: config.lr,
          warmupSteps: Math.max(1, Math.floor(steps / 10)),
          totalSteps: steps,
        }),
      seed: config.seed,
      onLog: config.onLog,
    })
  } finally {
    optimizer.dispose()
  }
  const trainMs = performance.now() - start
  return { records, examples: examples.length, before, after: await measure(), trainMs }
}
