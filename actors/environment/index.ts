/** The environment layer: the task interface, sessions, built-in tasks and their experts. */

export { ContainerExec, execIn } from './container-exec.ts'
export { ensureBusyboxImage } from './container-image.ts'
export {
  type ContainerCounts,
  ContainerLabels,
  ContainerManager,
  type ContainerManagerOptions,
} from './container-manager.ts'
export {
  type ControllerView,
  type EnvController,
  type EnvControllerCounts,
  type EnvControllerOptions,
  envControllerAccepts,
  envControllerBehaviour,
  startEnvController,
} from './controller.ts'
export { assistantTurns, deliberateTurn, lastToolResult } from './deliberate-turn.ts'
export {
  type EnvWorker,
  type EnvWorkerOptions,
  envWorkerAccepts,
  envWorkerBehaviour,
  startEnvWorker,
} from './env-worker.ts'
export {
  ContainerError,
  DifficultyError,
  DuplicateTaskError,
  HealthCheckError,
  InstanceError,
  PolicyEndpointCheckError,
  PolicyEndpointError,
  SandboxCheckError,
  SessionEndedError,
  TaskBackendError,
  TaskFileError,
  UnknownSessionError,
  UnknownTaskError,
  WorkerUnavailableError,
} from './errors.ts'
export {
  checkHeldOut,
  EVAL_SHARE,
  type InstanceRequest,
  type ResolvedInstance,
  resolveInstance,
  splitOfKey,
} from './instance.ts'
export { chatCompletionsUrl, OpenAIPolicy, type OpenAIPolicyOptions } from './openai-policy.ts'
export { type PlayedEpisode, type PlayOptions, playEpisode, playExpert } from './play.ts'
export { checkPolicyEndpoint } from './policy-endpoint-check.ts'
export { lookupTask, type TaskRegistry, taskRegistry } from './registry.ts'
export { hashSeed, TaskRng } from './rng.ts'
export { checkSandboxesOf, checkTaskSandboxes } from './sandbox-check.ts'
export { messageBytes, Session, type SessionStep } from './session.ts'
export { SessionHost, type SessionHostOptions, type SessionHostStats } from './session-host.ts'
export {
  type AnyTask,
  type ContainerHandle,
  type ContainerSpec,
  type DifficultyLevels,
  type ExpertOptions,
  type OpenContext,
  type Policy,
  type SandboxNeed,
  Split,
  type Task,
  type TaskEpisode,
  type TaskLimits,
  type ToolOutcome,
} from './task.ts'
export { isTask, isTaskFilePath, loadTaskFile, missingTaskFields } from './task-file.ts'
export {
  ArithmeticError,
  applyOp,
  backendCodeRunner,
  buildDatabase,
  type CalcInstance,
  type CalcOp,
  CodeFamily,
  type CodeInstance,
  type CodeRunner,
  type CodeTaskOptions,
  calc,
  calcExpert,
  code,
  codeExpert,
  createCodeTask,
  createSqlTask,
  DIRECTIONS,
  type Direction,
  defaultCodeRunner,
  defaultCodeRunnerWhere,
  distances,
  evaluate,
  formatNumber,
  formatResult,
  generateCalc,
  generateCode,
  generateMaze,
  generateSql,
  httpCodeRunner,
  isOpen,
  type MazeInstance,
  maze,
  mazeExpert,
  normalizeAnswer,
  SQL_SCHEMA,
  type SqlDepartment,
  type SqlInstance,
  type SqlPerson,
  SqlPool,
  type SqlPoolOptions,
  SqlQuestionKind,
  type SqlResult,
  type SqlTaskOptions,
  sql,
  sqlExpert,
  view,
} from './tasks/index.ts'
export { getTask, tasks } from './tasks.ts'
export { type CheckedToolCall, ToolArgsValidator, ToolCallProblem, validatorFor } from './tool-args.ts'
export { formatTrajectory } from './trajectory-text.ts'
export { type WorkerEntry, WorkerTable } from './worker-table.ts'
