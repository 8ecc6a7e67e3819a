export { playBounded } from './bounded-play.ts'
export { type CrossedEstimate, crossedMean } from './crossed-mean.ts'
export { EvaluationStatsError } from './errors.ts'
export {
  type EvalPolicyFor,
  type Evaluation,
  type EvaluationInstance,
  type EvaluationRow,
  type EvaluationSettings,
  evaluateEpisodes,
  evaluatePolicy,
} from './evaluate.ts'
export { ModelPolicy, type ModelPolicySettings } from './model-policy.ts'
export {
  instancesByTask,
  MEAN_TASK,
  type PairedDifference,
  pairedDifference,
  pairedDifferenceLine,
  sameIndices,
  type TaskInstances,
} from './paired-difference.ts'
