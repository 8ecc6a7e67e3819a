export { type AgentInstance, AgentInstances } from './agent-instances.ts'
export { AgentEnv, type AgentProcess, commandOf, startAgentProgram } from './agent-program.ts'
export { AgentRunner } from './agent-runner.ts'
export { type GatewayChatRequest, parseGatewayRequest, type RunSampling } from './chat-request.ts'
export { type CompletionTurn, completionChunks, completionObject } from './completion-reply.ts'
export { EpisodeRecorder, normalizeMessage, type PreparedCall, SegmentBreak } from './episode-recorder.ts'
export { type EpisodeReward, parseEpisodeReward } from './episode-reward.ts'
export {
  AgentEpisodeError,
  AgentFailure,
  AgentInstancesError,
  ContextFullError,
  GatewayHttpError,
  RewardFunctionError,
} from './errors.ts'
export {
  Gateway,
  type GatewayOptions,
  type GatewayStats,
  SESSION_HEADER,
  type TurnGenerator,
} from './gateway.ts'
export { GatewaySession, type SessionOptions, type SessionOutcome } from './gateway-session.ts'
export { type AgentRewardFunction, loadRewardFunction } from './reward-module.ts'
