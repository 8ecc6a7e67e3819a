export {
  type Episode,
  type EpisodeDeps,
  type EpisodeEnv,
  type EpisodeSettings,
  runEpisode,
} from './agent-loop.ts'
export type {
  AgentEpisodeResult,
  AgentEpisodeRunner,
  AgentInstanceRef,
  AgentTaskSpec,
  McpServerSpec,
  McpTaskSpec,
} from './agent-task.ts'
export { EnvClient, type EnvSession, type EnvStep } from './env-client.ts'
export { EpisodeError, EpisodeFailure, RolloutSettingsError } from './errors.ts'
export { type GeneratedTurn, PolicyRouter, type Uniform } from './policy-router.ts'
export {
  type EpisodeAnnotator,
  type GroupSink,
  type RolloutDeps,
  RolloutDriver,
  type RolloutSettings,
  type RolloutStats,
  type TaskMixEntry,
} from './rollout.ts'
export { TrajectoryBuilder } from './trajectory-builder.ts'
