/**
 * Write errors of a run: a file of the run directory that cannot be written (a full disk, a quota,
 * a read-only remount, an I/O error). A restart cannot help with any of them, so a role that hits
 * one is not restarted and the run stops cleanly with one line naming the role and the path
 * (docs/design.md#actors-and-supervision).
 */

/**
 * The errno codes of a failed write that a restart cannot help (ENOSPC a full disk, EDQUOT a
 * quota, EROFS a read-only file system, EIO the device, EFBIG a file over the limit).
 */
export const WRITE_ERROR_CODES = ['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EFBIG'] as const

/** What each write error code says, as the line says it (`no space left on device` for ENOSPC). */
const SAYS: Record<(typeof WRITE_ERROR_CODES)[number], string> = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  EFBIG: 'file too large',
}

/** The write error code of `err` (its own `code`, or its cause's), or undefined for any other error. */
export function writeErrorCode(err: unknown): (typeof WRITE_ERROR_CODES)[number] | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && (WRITE_ERROR_CODES as readonly string[]).includes(code))
      return code as (typeof WRITE_ERROR_CODES)[number]
    // A message that crossed a process boundary keeps only its text (`ENOSPC: no space ...`).
    const message = (e as { message?: unknown }).message
    if (typeof message === 'string') {
      const m = /\b(ENOSPC|EDQUOT|EROFS|EIO|EFBIG)\b/.exec(message)
      if (m) return m[1] as (typeof WRITE_ERROR_CODES)[number]
    }
  }
  return undefined
}

/** True when `err` is a write error a restart cannot help (`WRITE_ERROR_CODES`). */
export function isWriteError(err: unknown): boolean {
  return writeErrorCode(err) !== undefined
}

/**
 * A file of a run that could not be written: `<role>: cannot write <path>: no space left on device
 * (ENOSPC)`. Not restartable (`restartable: false`): a supervisor gives up at once.
 */
export class RunWriteError extends Error {
  override name = 'RunWriteError'
  /** A restart cannot help (read by `childFailureLine`). */
  readonly restartable = false
  /** The errno code (`ENOSPC`, ...). */
  readonly code: string
  constructor(
    /** Who wrote: `run`, `learner`, `rollout`, `eval`, `nats-server`, ... */
    readonly role: string,
    /** The file or folder that could not be written. */
    readonly path: string,
    cause: unknown,
  ) {
    const code = writeErrorCode(cause) ?? String((cause as { code?: unknown })?.code ?? 'EIO')
    const says = SAYS[code as keyof typeof SAYS] ?? (cause as Error)?.message ?? String(cause)
    super(`${role}: cannot write ${path}: ${says} (${code})`, { cause })
    this.code = code
  }
}

/**
 * `err` as a `RunWriteError` of `role` when it is a write error (its own `path` when the error has
 * one, else `path`); any other error as it is. A `RunWriteError` is kept as it is.
 */
export function asWriteError(err: unknown, role: string, path: string): unknown {
  if (err instanceof RunWriteError || !isWriteError(err)) return err
  const own = (err as { path?: unknown }).path
  return new RunWriteError(role, typeof own === 'string' ? own : path, err)
}
