/** The trajectory stream stayed full until the publish deadline (the learner is not consuming). */
export class BufferFullError extends Error {
  override name = 'BufferFullError'
  constructor(
    readonly stream: string,
    readonly waitedMs: number,
  ) {
    super(`trajectory buffer ${stream} stayed full for ${waitedMs} ms: is the learner running?`)
  }
}

/** A publish on a trajectory publisher after (or waiting when) it was closed. */
export class PublisherClosedError extends Error {
  override name = 'PublisherClosedError'
  constructor(readonly stream: string) {
    super(`trajectory publisher of ${stream} is closed`)
  }
}

/**
 * The run's trajectory stream does not exist (nobody called `ensureTrajectoryStream`). The message
 * says "not found", as JetStream's does, so loops that retry a missing stream treat both alike.
 */
export class TrajectoryStreamNotFoundError extends Error {
  override name = 'TrajectoryStreamNotFoundError'
  constructor(readonly stream: string) {
    super(`trajectory stream ${stream} not found (is the learner running?)`)
  }
}

/** A setting of checkpoint pruning that cannot be honoured (keep fewer than one checkpoint). */
export class CheckpointPruneError extends Error {
  override name = 'CheckpointPruneError'
  constructor(
    readonly checkpointDir: string,
    readonly keep: number,
  ) {
    super(
      `cannot prune ${checkpointDir} to keep ${keep} checkpoint(s): keep must be an integer >= 1 (the latest is always kept)`,
    )
  }
}

/**
 * A resumed learner found step checkpoints (`latest.json` exists) but none of them can be read.
 * A restart cannot help (`restartable` is false: a supervisor gives up on the process at once).
 * The message is one line naming each checkpoint tried and why it failed.
 */
export class NoReadableCheckpointError extends Error {
  override name = 'NoReadableCheckpointError'
  /** A restart of the process would fail the same way. */
  readonly restartable = false
  constructor(
    /** The run's checkpoint directory. */
    readonly checkpointDir: string,
    /** Each checkpoint tried, newest first (`latest.json` itself when it does not parse), and why it failed. */
    readonly tried: readonly { name: string; error: string }[],
  ) {
    super(
      `no step checkpoint in ${checkpointDir} can be read, so the run cannot resume: ${tried.map((t) => `${t.name}: ${t.error}`).join('; ')}`,
    )
  }
}

/** The run's trajectory log (`trajectories.bin`) is missing or holds a record that does not decode. */
export class TrajectoryLogError extends Error {
  override name = 'TrajectoryLogError'
  constructor(
    /** The log file. */
    readonly file: string,
    /** What is wrong with it. */
    readonly reason: string,
    cause?: unknown,
  ) {
    super(
      `trajectory log ${file}: ${reason}${cause ? `: ${(cause as Error).message ?? String(cause)}` : ''}`,
      {
        cause,
      },
    )
  }
}
