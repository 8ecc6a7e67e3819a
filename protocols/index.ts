export {
  type AssistantMessage,
  type ChatMessage,
  ChatMessageSchema,
  type ToolCall,
  type ToolMessage,
  type ToolSchema,
  ToolSchemaSchema,
  type UserMessage,
} from './chat.ts'
export { decode, encode } from './codec.ts'
export { EnvDifficulty, EnvDifficultyGet, type TaskDifficulty } from './difficulty-api.ts'
export { EchoPing, EchoPong } from './echo-api.ts'
export {
  EnvAck,
  EnvCancel,
  EnvCancelAll,
  EnvCancelled,
  EnvDrain,
  EnvHeartbeat,
  EnvInteract,
  EnvInteracted,
  EnvList,
  EnvStart,
  EnvStarted,
  EnvWorkerInfoSchema,
  EnvWorkerLost,
  EnvWorkerStart,
  EnvWorkers,
  SessionStatus,
} from './env-api.ts'
export { ErrorCode, InvariantError, ProtocolError, RemoteError, ValidationError } from './errors.ts'
export { LearnerState, LearnerStatus } from './learner-api.ts'
export { type Envelope, encodeEnvelope, errorReply, MessageRegistry, type PayloadOf } from './message.ts'
export {
  type MetricKey,
  MetricKind,
  MetricPanel,
  type MetricValues,
  metricEntries,
  metricKeyInfo,
  metricRecord,
} from './metric-catalog.ts'
export { MetricsAxes, type MetricsAxis, MetricsReport } from './metrics-api.ts'
export { PolicyGenerate, PolicyGenerated } from './policy-api.ts'
export {
  type JudgeStep,
  RewardJudge,
  RewardJudged,
  RewardLoadWeights,
  RewardWeightsLoaded,
} from './reward-api.ts'
export { RolloutState, RolloutStatus } from './rollout-api.ts'
export {
  type CommandRunResult,
  CommandRunStatus,
  type RunCodeRequest,
  type RunCodeRequestInput,
  RunCodeRequestSchema,
  type RunCodeResponse,
  RunCodeResponseSchema,
  RunStatus,
  SANDBOX_LANGUAGES,
  SandboxCodeResult,
  type SandboxHealth,
  SandboxHealthSchema,
  SandboxLanguage,
  SandboxRunCode,
  statusOf,
} from './sandbox-api.ts'
export { checkToken, QueueGroups, Subjects } from './subjects.ts'
export { type Trajectory, TrajectoryGroup, type TrajectoryGroupPayload } from './trajectory-api.ts'
export type { Bytes, Millis, Seconds } from './units.ts'
export { checkVersion, PROTOCOL_VERSION } from './version.ts'
export { WeightsPublished, weightsBucket } from './weights-api.ts'
