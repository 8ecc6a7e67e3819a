export { playBounded } from './bounded-play.ts'
export {
  type EvalPolicyFor,
  type EvaluationRow,
  type EvaluationSettings,
  evaluateEpisodes,
  evaluatePolicy,
} from './evaluate.ts'
export { ModelPolicy, type ModelPolicySettings } from './model-policy.ts'
