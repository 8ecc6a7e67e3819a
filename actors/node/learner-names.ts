import type { BackendChoice, ChatFormat, Tokenizer, TransformerConfig } from '../../gpu/index.ts'
import { InvariantError, type MetricsAxis, type MetricValues, type Millis } from '../../protocols/index.ts'
import type { Learner } from '../learner/index.ts'
import type { LearnerLoop, PipelineCheckpoint } from '../pipeline/index.ts'
import { type ActorSystem, type RegisteredName, registeredName } from '../runtime/index.ts'
import type { RewardModelLearner } from '../triad/index.ts'
import type { PretrainedPolicy } from './pretrained-policy.ts'
import type { ExpertEpisode } from './sft-dataset.ts'

/**
 * The ack wait of the learner's durable consumer, ms: how long the stream waits for the
 * acknowledgement of a group it handed out before it hands the group out again. Shorter than a
 * learner's restart (the supervisor's backoff, then a process start that loads the tensor
 * library and restores the checkpoint, several seconds), so after a learner dies (`kill -9`) the
 * groups it held are free again by the time the next learner asks for them, instead of holding the
 * stream full for a minute. A live learner keeps its groups alive every third of it
 * (`LearnerLoopSettings.keepAliveMs`), and one handed out again during a long step is recognised
 * by its sequence and not used twice.
 */
export const LEARNER_ACK_WAIT_MS: Millis = 5_000

/**
 * Publishes one metrics report of the learner (`reportMetrics`) and keeps its values for
 * `learner.status`; `axis` says what `step` counts when it is not the learner step (the cold
 * starts' SFT steps).
 */
export type LearnerReport = (values: MetricValues, step: number, axis?: MetricsAxis) => void

/** The policy's model as the `model` child settles it, before any weights. */
export interface LearnerModel {
  /** The process's tensor backend (its name goes into the cold starts' checkpoint metadata). */
  backend: BackendChoice
  /** A pretrained policy: its shared base, LoRA settings and chat format; absent for triad's own model. */
  pretrained?: PretrainedPolicy
  /** The run's own tokenizer (learned or loaded); absent with a pretrained policy. */
  tokenizer?: Tokenizer
  /** What the policy's text is rendered with: the pretrained model's chat format, else the run's tokenizer. */
  chat: ChatFormat | Tokenizer
  /** The policy's transformer config (`config.model` with the tokenizer's vocabulary, or the pretrained one). */
  modelConfig: TransformerConfig
  /**
   * The cold-start SFT's expert episodes when the tokenizer was learned in this start (played for
   * its corpus); absent otherwise (the SFT plays its own).
   */
  experts?: ExpertEpisode[]
}

/** The policy learner as the `cold-start` child leaves it: resumed, or from the SFT or initial weights. */
export interface ColdStartedPolicy {
  learner: Learner
  /** The step checkpoint it resumed from; absent on a fresh run. */
  latest?: PipelineCheckpoint
  /** Whether the reward-model learner was restored from that checkpoint too. */
  rewardModelRestored: boolean
}

/** What the `reward-model-cold-start` child leaves: the reward model's weights to publish at version 0. */
export interface ColdStartedRewardModel {
  /** By parameter name (`RewardModel.getWeights`). */
  weights: Record<string, Float32Array>
}

/**
 * The registered names of the learner tree's children (`learnerTree`, docs/design.md "The trees of
 * a run"): each child registers what it made under its name when it starts and removes it when it
 * stops (`ActorSystem.register`); the children after it look it up (`ActorSystem.whereis`).
 * Prefixed `learner:` (a colon, so no name reads as a metric key): one process may hold the rollout's tree too.
 */
export const LearnerNames = {
  /** The `learner` child's metrics report. */
  report: registeredName<LearnerReport>('learner:report'),
  /** The `model` child's policy model. */
  model: registeredName<LearnerModel>('learner:model'),
  /** The `reward-model-learner` child's reward model and its optimizer (reward-model training on). */
  rewardModelLearner: registeredName<RewardModelLearner>('learner:reward-model-learner'),
  /** The `cold-start` child's policy learner. */
  policy: registeredName<ColdStartedPolicy>('learner:policy'),
  /** The `reward-model-cold-start` child's reward model (when it ran). */
  rewardModelColdStart: registeredName<ColdStartedRewardModel>('learner:reward-model-cold-start'),
  /** The `learner-loop` child's loop (its counts feed `learner.status`). */
  loop: registeredName<LearnerLoop>('learner:loop'),
} as const

/**
 * The handle registered under `name` in `system`.
 * @throws InvariantError when none is: the tree starts the child that registers it earlier.
 */
export function registered<T>(system: ActorSystem, name: RegisteredName<T>): T {
  const handle = system.whereis(name)
  if (handle === undefined) throw new InvariantError(`nothing is registered as ${name.name} yet`)
  return handle
}
