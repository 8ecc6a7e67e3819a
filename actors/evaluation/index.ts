export {
  type AgenticEvalSettings,
  type AgenticEvalTask,
  agenticInstanceCount,
  type EvalOutcome,
  playAgenticTasks,
} from './agent-evaluation.ts'
export { BatcherTurns } from './batcher-turns.ts'
export { playBounded } from './bounded-play.ts'
export { type CrossedEstimate, crossedMean } from './crossed-mean.ts'
export { EvaluationStatsError } from './errors.ts'
export {
  type EvalPolicyFor,
  type Evaluation,
  type EvaluationInstance,
  type EvaluationRow,
  type EvaluationSettings,
  type EvaluationTask,
  evaluateEpisodes,
  evaluatePolicy,
  isAgenticTask,
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
