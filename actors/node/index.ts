export {
  coldStart,
  expertExamples,
  firstEpisodesPerTask,
  playExperts,
  runTokenizer,
  sftEpisodes,
  sftTrainingEpisodes,
  TOKENIZER_CORPUS_PER_TASK,
} from './cold-start.ts'
export {
  learnerSettingsOf,
  type NodeConfig,
  NodeConfigSchema,
  type NodeTriadConfig,
  type PolicyOptimizerConfig,
  parseNodeConfig,
  ROLLOUT_ATTEMPTS,
  rolloutSettingsOf,
} from './config.ts'
export {
  NodeConfigError,
  NoSftDataError,
  SftDatasetError,
  StartAbortedError,
  TokenizerTimeoutError,
} from './errors.ts'
export { startLearnerActor } from './learner-actor.ts'
export { LOGITS_BYTES_PER_PASS, microBatchTokensFor, rlStartingPolicy } from './learner-cold-start.ts'
export { LEARNER_ACK_WAIT_MS } from './learner-names.ts'
export { learnerTree, type NodeHandle, type NodeOptions, startLearnerNode } from './learner-node.ts'
export {
  exposeLearner,
  type LearnerNodeStatus,
  learnerState,
  learnerStatusAccepts,
} from './learner-status.ts'
export {
  adaptersFromCheckpoint,
  freshAdapters,
  loadPretrainedPolicy,
  type PretrainedPolicy,
} from './pretrained-policy.ts'
export { reportMetrics } from './report-metrics.ts'
export { LOOPS_END_MS, type RolloutModel, rolloutAccepts, startRolloutActor } from './rollout-actor.ts'
export type { PolicyVersionWatch } from './rollout-names.ts'
export { rewardActorOptionsOf, rolloutTree, startRolloutNode } from './rollout-node.ts'
export { fetchRunTokenizer, publishRunTokenizer, TOKENIZER_OBJECT } from './run-tokenizer.ts'
export {
  type ExpertEpisode,
  readSftDataset,
  readSftDatasets,
  type SftDataset,
  SftDatasetFormat,
  sftRow,
} from './sft-dataset.ts'
