export {
  AdaptAction,
  type AdaptCounts,
  type AdaptDecision,
  AdaptGranularity,
  DifficultyAdapter,
  type DifficultyAdapterConfig,
  type EpisodeResult,
  type TaskLevels,
  trajectorySuccess,
} from './difficulty-adapter.ts'
export { DifficultyView } from './difficulty-view.ts'
export {
  type EnvAdapterOptions,
  type EnvAdapterState,
  envAdapterAccepts,
  envAdapterBehaviour,
  envAdapterReplies,
  startEnvAdapter,
} from './env-adapter-actor.ts'
