export type { SupervisionPolicy } from '../runtime/index.ts'
export {
  type Chaos,
  type ChaosKill,
  type ChaosOptions,
  type ChaosTarget,
  ChaosUnavailableError,
  chaosKillLine,
  chaosReportLines,
  chaosSupervision,
  startChaos,
} from './chaos.ts'
export { NatsServerError, RoleFailedError, RoleGaveUpError } from './errors.ts'
export {
  type EvalProcess,
  type EvalProcessOptions,
  evalProcessArgs,
  startEvalProcess,
} from './eval-process.ts'
export { freePort } from './free-port.ts'
export { type InProcessNodeOptions, type InProcessNodes, startInProcessNodes } from './in-process-nodes.ts'
export {
  findNatsServer,
  NATS_BIND_ATTEMPTS,
  NATS_STOP_GRACE_MS,
  NATS_STORE_ERROR,
  type NatsServer,
  type NatsServerExit,
  type NatsServerOptions,
  natsServerOnPath,
  portInUse,
  startNatsServer,
} from './nats-server.ts'
export {
  NATS_SERVER_SUPERVISION,
  type NatsServerEvent,
  type NatsServerSupervision,
  natsServerEventLine,
  superviseNatsServer,
} from './nats-server-supervision.ts'
export {
  checkStoreFree,
  liveStoreHolder,
  NATS_STORE_LOCK_FILE,
  type NatsStoreHolder,
} from './nats-store-lock.ts'
export { type NodeProcessOptions, startNodeProcesses } from './node-processes.ts'
export {
  AfterExit,
  CHILD_STOP_WATCHDOG_MS,
  type ChildFailure,
  childFailureLine,
  logStream,
  OUTPUT_GRACE_MS,
  PROCESS_SUPERVISION,
  type ProcessEvent,
  type ProcessSpec,
  ProcessSupervisor,
  parseChildFailure,
  processEventLine,
  STOP_GRACE_MS,
  type SupervisedProcess,
} from './process-supervisor.ts'
export {
  checkRoleThreads,
  inProcessThreads,
  roleThreadsEnv,
  splitCores,
  type ThreadedRole,
} from './role-threads.ts'
