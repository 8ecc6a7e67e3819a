export {
  NotARunDirError,
  RunFileExistsError,
  RunFileFormatError,
  RunLockContendedError,
  RunLockedError,
  RunsDirError,
} from './errors.ts'
export {
  type EvalInstance,
  EvalInstanceSchema,
  type EvalPaired,
  EvalPairedSchema,
  type EvalResult,
  EvalResultSchema,
  evalResultFile,
  finalEvalName,
  isFinalEvalFile,
  readEvalResults,
  writeEvalResult,
} from './eval-file.ts'
export {
  EvalSchedule,
  type EvalScheduleOptions,
  type EvalSkipReason,
  nextEvaluationStep,
  type SkippedEvaluation,
} from './eval-schedule.ts'
export {
  type FindFinishedRunOptions,
  type FinishedRun,
  findFinishedRun,
  RUN_SIGNAL_EXIT_CODES,
  type RunEnd,
  type RunStopReason,
  readRunEnd,
  readRunEvents,
  runEndLine,
} from './finished-run.ts'
export { auditGroups, auditIsClean, type GroupAudit, groupAuditLine } from './group-audit.ts'
export {
  formatMetricsLine,
  type MetricsFile,
  type MetricsLine,
  onLearnerAxis,
  parseMetricsLines,
  readMetricsFile,
} from './metrics-file.ts'
export {
  ALL_RUNS_METRICS,
  type MetricsSink,
  type MetricsSinkOptions,
  type MetricsSinkStats,
  metricsWildcard,
  runOfMetricsSubject,
  startMetricsSink,
} from './metrics-sink.ts'
export {
  ProcessRestartReport,
  type ProcessRestartReportOptions,
  processRestartsKey,
  RUN_ENDED,
  RUN_FINISHED,
  RUN_MAX_STEPS,
} from './process-restarts.ts'
export { latestRunCheckpoint, type RunCheckpoint } from './run-checkpoint.ts'
export {
  appendRunLog,
  type CreateRunDirOptions,
  createRunDir,
  createRunDirAt,
  type OpenedRun,
  openRunDir,
  RECIPE_FILE,
  type RunDir,
  runDirPaths,
  runTimestamp,
  writeNewFile,
} from './run-dir.ts'
export {
  LEARNER_LOCK_FILE,
  type LockRunDirOptions,
  lockHolderState,
  lockRunDir,
  RUN_LOCK_FILE,
  type RunLock,
  type RunLockHolder,
  readRunLock,
} from './run-lock.ts'
export { type RunTransport, RunTransportKind, readRunTransport, recordRunTransport } from './run-transport.ts'
export {
  TENSORBOARD_DIR,
  TensorBoardWriter,
  type TensorBoardWriterOptions,
  tensorboardRunName,
} from './tensorboard-writer.ts'
export { fileVersionEvent, scalarsEvent, TF_EVENT_FILE_VERSION } from './tf-event.ts'
export { maskedCrc32c, tfRecord } from './tfrecord.ts'
