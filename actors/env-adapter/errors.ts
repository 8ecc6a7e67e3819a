/**
 * Errors of the env adapter. Each class sets `name`, keeps `cause` and carries useful data.
 */

/** An adapter setting out of range (window, thresholds, levels). */
export class AdapterConfigError extends Error {
  override name = 'AdapterConfigError'
  readonly field: string
  readonly value: unknown
  constructor(field: string, value: unknown, message: string) {
    super(`${field}=${JSON.stringify(value)}: ${message}`)
    this.field = field
    this.value = value
  }
}
