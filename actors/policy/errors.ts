/**
 * Errors of the policy engines (`actors/policy/`). Each class sets `name`, keeps `cause` and
 * carries the data a caller needs to act on it.
 */

/** A bad option of `startPolicyEngine`. */
export class PolicyEngineConfigError extends Error {
  override name = 'PolicyEngineConfigError'
  /** The offending option. */
  readonly field: string
  readonly value: unknown
  constructor(field: string, value: unknown, message: string, options?: { cause?: unknown }) {
    super(`${field}=${JSON.stringify(value)}: ${message}`, options)
    this.field = field
    this.value = value
  }
}
