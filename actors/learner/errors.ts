/**
 * Errors of the learner. Each class sets `name`, keeps `cause` and carries the data a caller needs.
 */

/** A batch the learner cannot train on (empty, a trajectory longer than the context, bad arrays). */
export class BatchError extends Error {
  override name = 'BatchError'
  /** The group at fault, when one is. */
  readonly groupId: string | undefined
  /** Index of the sample within its group, when one is at fault. */
  readonly sample: number | undefined
  constructor(message: string, options?: { groupId?: string; sample?: number; cause?: unknown }) {
    super(message, { cause: options?.cause })
    this.groupId = options?.groupId
    this.sample = options?.sample
  }
}

/** A learner checkpoint that cannot be written or read, or that does not fit the model. */
export class LearnerCheckpointError extends Error {
  override name = 'LearnerCheckpointError'
  /** The checkpoint directory. */
  readonly path: string
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`${path}: ${message}`, { cause: options?.cause })
    this.path = path
  }
}
