export { unlessAborted } from './abort.ts'
export {
  type ActorContext,
  type ActorRef,
  type ActorStats,
  ActorSystem,
  type Behaviour,
  type Escalation,
  type RegisteredName,
  registeredName,
  type SpawnOptions,
  startActorSystem,
} from './actor-system.ts'
export { type Exposed, type ExposeOptions, exposeActor, type RemoteRef, remoteActor } from './bridge.ts'
export { type Clock, ManualClock, sleep, systemClock } from './clock.ts'
export {
  ActorCrashedError,
  ActorStoppedError,
  ActorTimeoutError,
  NatsConnectError,
  NoRespondersError,
  PayloadTooLargeError,
  RequestAbortedError,
  RequestInterruptedError,
  RequestTimeoutError,
  SupervisionPolicyError,
  TransportClosedError,
} from './errors.ts'
export { InProcessTransport } from './in-process-transport.ts'
export {
  type ConnectionIdentity,
  connectionName,
  connectNats,
  type NatsConnectOptions,
  NatsTransport,
  streamReplicas,
} from './nats-transport.ts'
export { type CommandLine, dieWithParent, findSetpriv, OWN_PROCESS_GROUP } from './parent-death.ts'
export {
  childLogLine,
  closeRoleLogger,
  createRoleLogger,
  infoLines,
  LogLevels,
  type OutputStream,
  type RoleLogBindings,
} from './role-logger.ts'
export { annotateSeedOf, episodeSeeds, judgedStepsSeedOf, type RunSeeds, runSeeds } from './run-seeds.ts'
export { subjectMatches } from './subject-match.ts'
export {
  type CrashDecision,
  defaultSupervision,
  OnLimit,
  RestartTracker,
  type SupervisionPolicy,
} from './supervision.ts'
export {
  type Child,
  type ChildContext,
  type ChildSpec,
  childSupervision,
  Restart,
  type RunningTree,
  type StartTreeOptions,
  Strategy,
  startTree,
  type TreeSpec,
} from './supervision-tree.ts'
export {
  answerRequest,
  emptyServeStats,
  envelope,
  fitReply,
  type RequestHandler,
  type RequestOptions,
  readReply,
  type Served,
  type ServeOptions,
  type ServeStats,
  type ServiceSpec,
  type SubscribeOptions,
  type Transport,
  toErrorPayload,
} from './transport.ts'
export {
  asWriteError,
  isWriteError,
  RunWriteError,
  WRITE_ERROR_CODES,
  writeErrorCode,
} from './write-error.ts'
