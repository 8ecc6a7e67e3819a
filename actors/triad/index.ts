export { JudgePromptTooLongError, TriadConfigError } from './errors.ts'
export {
  BAD_VERDICT_TOKEN,
  episodeJudgeSteps,
  GOOD_VERDICT_TOKEN,
  type JudgeFormat,
  type JudgePromptOptions,
  judgeSystem,
  renderJudgePrompt,
  TRIAD_VERDICT_TOKENS,
  verdictOf,
  verdictTokensOf,
} from './judge-prompt.ts'
export { ONLINE_ACCURACY_WINDOW, OnlineStepAccuracy } from './online-accuracy.ts'
export {
  judgementAccuracy,
  type PolicyStepAdvantages,
  policyStepAdvantages,
  stepLabels,
} from './policy-step-reward.ts'
export {
  type RewardActorOptions,
  type RewardActorState,
  rewardAccepts,
  rewardBehaviour,
  rewardReplies,
  startRewardModel,
} from './reward-actor.ts'
export {
  type Judgements,
  type PretrainedJudgeBase,
  RewardModel,
  type RewardModelOptions,
} from './reward-model.ts'
export {
  loadRewardModelCheckpoint,
  REWARD_MODEL_CHECKPOINT_DIR,
  RewardModelCheckpointFile,
  saveRewardModelCheckpoint,
} from './reward-model-checkpoint.ts'
export {
  type ColdStartNodeConfig,
  loadRewardModelSft,
  playLabelledSteps,
  playPolicyLabelledSteps,
  REWARD_MODEL_SFT_DIR,
  REWARD_MODEL_SFT_FILE,
  type RewardModelSftConfig,
  type RewardModelSftReport,
  rewardModelColdStart,
  rewardModelColdStartOnce,
  rewardModelSftMetrics,
  saveRewardModelSft,
} from './reward-model-cold-start.ts'
export { buildRewardModelBatch, type JudgedStep, trainRewardModelStep } from './reward-training.ts'
export { type EpisodeJudgements, StepJudge, type StepJudgeOptions } from './step-judge.ts'
export { type JudgementFields, stepJudgeAnnotator } from './step-judging.ts'
export {
  balancedStepAccuracy,
  judgedSteps,
  RewardModelLearner,
  sampleJudgedSteps,
  stepRewardAdvantages,
  stepRewardsTrusted,
} from './triad-learner.ts'
export {
  parseTriadSwitches,
  switchMetrics,
  TRIAD_SWITCHES_DEFAULTS,
  TRIAD_SWITCHES_OFF,
  type TriadSwitches,
} from './triad-switches.ts'
export {
  balanceSteps,
  type LabelledStep,
  trainVerdictSft,
  type VerdictAccuracy,
  type VerdictSftConfig,
  type VerdictSftResult,
  verdictAccuracy,
  verdictSftExample,
} from './verdict-sft.ts'
