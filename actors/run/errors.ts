/** A path given as a run directory that is not one (missing, not a directory, or no `recipe.json`). */
export class NotARunDirError extends Error {
  override name = 'NotARunDirError'
  constructor(
    readonly path: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`${path} is not a triad run directory (${reason})`, { cause })
  }
}

/**
 * The parent folder of new run directories (`triad run --runs-dir`) that cannot hold them: it is a
 * file, a folder above it is a file, or it may not be written. Nothing was created.
 */
export class RunsDirError extends Error {
  override name = 'RunsDirError'
  constructor(
    readonly path: string,
    /** Why, in words: `it is a file, not a folder`. */
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`cannot make a run directory in ${path}: ${reason}`, { cause })
  }
}

/** A run file that already exists and would be overwritten. Nothing of an existing run is replaced. */
export class RunFileExistsError extends Error {
  override name = 'RunFileExistsError'
  constructor(
    readonly path: string,
    cause?: unknown,
  ) {
    super(`${path} already exists; triad never overwrites a run's files`, { cause })
  }
}

/** A line of `metrics.jsonl` or a file under `eval/` that does not parse. */
export class RunFileFormatError extends Error {
  override name = 'RunFileFormatError'
  constructor(
    readonly path: string,
    readonly detail: string,
    cause?: unknown,
  ) {
    super(`${path}: ${detail}`, { cause })
  }
}

/**
 * A run directory that another `triad run` holds (its `run.lock` names a live process, or one on
 * another host, which this host cannot check), whose `run.lock` is not a lock this code wrote, or
 * whose `learner.lock` names a live learner process (of an earlier run, orphaned). Nothing of the
 * run was changed.
 */
export class RunLockedError extends Error {
  override name = 'RunLockedError'
  constructor(
    /** The run directory. */
    readonly path: string,
    /** Its lock file, `<path>/run.lock`. */
    readonly lockFile: string,
    /** Who holds it; undefined when the file does not parse. */
    readonly holder: { pid: number; hostname: string; started: number } | undefined,
    /** True when the holder runs on another host (its pid cannot be checked from here). */
    readonly elsewhere = false,
    cause?: unknown,
  ) {
    super(RunLockedError.describe(path, lockFile, holder, elsewhere), { cause })
  }

  private static describe(
    path: string,
    lockFile: string,
    holder: { pid: number; hostname: string; started: number } | undefined,
    elsewhere: boolean,
  ): string {
    if (!holder)
      return `${path} is locked by ${lockFile}, which is not a triad run lock; delete it if no triad run uses ${path}`
    const since = new Date(holder.started).toISOString()
    if (!elsewhere && lockFile.endsWith('/learner.lock'))
      return `${path} is in use by the learner of an earlier triad run (pid ${holder.pid}, since ${since}), which still runs; it stops by itself within seconds of its triad run's end: wait for it (or kill ${holder.pid}) before running in this directory again`
    if (elsewhere)
      return `${path} is in use by triad run pid ${holder.pid} on host ${holder.hostname} since ${since}; this host cannot check that process: if that run is gone, delete ${lockFile}`
    return `${path} is in use by another triad run (pid ${holder.pid}, since ${since}); stop it or wait for it to end before running in this directory again`
  }
}

/**
 * A run lock that could not be taken because other processes kept taking and releasing it through
 * every attempt (the lock itself is free in between, so nobody holds the run for long: try again).
 */
export class RunLockContendedError extends Error {
  override name = 'RunLockContendedError'
  constructor(
    /** The lock file. */
    readonly lockFile: string,
  ) {
    super(`could not take ${lockFile}: other processes kept taking and releasing it`)
  }
}
