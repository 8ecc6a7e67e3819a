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
export { type NodeProcessOptions, startNodeProcesses } from './node-processes.ts'
export {
  AfterExit,
  CHILD_STOP_WATCHDOG_MS,
  type ChildFailure,
  childFailureLine,
  OUTPUT_GRACE_MS,
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
