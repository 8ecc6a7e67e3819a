export { type PackOptions, packGroups } from './batch.ts'
export { BatchError, LearnerCheckpointError } from './errors.ts'
export {
  checkpointName,
  Learner,
  LearnerCheckpointFile,
  type LearnerOptions,
  latestCheckpoint,
} from './learner.ts'
