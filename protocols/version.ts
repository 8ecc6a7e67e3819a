import { VersionMismatchError } from './errors.ts'

/**
 * The triad wire protocol version, `MAJOR.MINOR`. Every message carries it as `v`. Peers of the
 * same major version interoperate (a minor bump only adds optional fields or message types);
 * a different major version is refused.
 */
export const PROTOCOL_VERSION = '1.0'

/** The major part of a `MAJOR.MINOR` version string; NaN when it has none. */
export function majorOf(version: string): number {
  const m = /^(\d+)\.(\d+)$/.exec(version)
  return m ? Number(m[1]) : Number.NaN
}

/**
 * Throws unless `peer` has the same major version as this process.
 * @throws VersionMismatchError when the majors differ or `peer` is not `MAJOR.MINOR`.
 */
export function checkVersion(peer: string, local: string = PROTOCOL_VERSION): void {
  const a = majorOf(peer)
  if (Number.isNaN(a) || a !== majorOf(local)) throw new VersionMismatchError(peer, local)
}
