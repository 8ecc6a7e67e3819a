export { checkpointStep, type PruneResult, pruneCheckpoints } from './checkpoint-pruning.ts'
export {
  BufferFullError,
  CheckpointPruneError,
  NoReadableCheckpointError,
  PublisherClosedError,
  TrajectoryLogError,
  TrajectoryStreamNotFoundError,
} from './errors.ts'
export {
  ensureInProcessTrajectoryStream,
  InProcessTrajectoryConsumer,
  InProcessTrajectoryPublisher,
} from './in-process-trajectory-stream.ts'
export {
  ensureJetStreamTrajectoryStream,
  JetStreamTrajectoryConsumer,
  JetStreamTrajectoryPublisher,
  streamManager,
} from './jetstream-trajectory-stream.ts'
export {
  type AckRecord,
  type LearnerCore,
  LearnerLoop,
  type LearnerLoopSettings,
  oldestVersion,
  type PipelineCheckpoint,
  readAckRecords,
  readLatestCheckpoint,
} from './learner-loop.ts'
export {
  ensureTrajectoryStream,
  openTrajectoryConsumer,
  openTrajectoryPublisher,
} from './open-trajectory-stream.ts'
export { restoreNewestCheckpoint, resumeCandidates } from './resume-checkpoint.ts'
export {
  appendTrajectoryLog,
  readTrajectoryLog,
  TRAJECTORY_LOG_FILE,
  type TrajectoryLogRecord,
} from './trajectory-log.ts'
export {
  addDelivered,
  DEFAULT_ACK_WAIT_MS,
  type Delivered,
  decodeGroup,
  encodeGroup,
  type TakenGroup,
  type TrajectoryConsumer,
  type TrajectoryPublisher,
  type TrajectoryStreamOptions,
  trajectoryStreamName,
  trajectorySubject,
} from './trajectory-stream.ts'
