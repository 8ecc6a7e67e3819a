/**
 * Unit aliases for wire fields. A field typed `Millis` is a duration in milliseconds, and so on.
 * They are plain numbers at run time; the alias documents the unit at every use.
 */

/** A duration or timestamp in milliseconds. */
export type Millis = number
/** A duration in seconds (SandboxFusion's `run_timeout`, `execution_time`). */
export type Seconds = number
/** A count of tokens. */
export type Tokens = number
/** A size in bytes. */
export type Bytes = number

/** Converts seconds to milliseconds. */
export const secondsToMillis = (s: Seconds): Millis => s * 1000
/** Converts milliseconds to seconds. */
export const millisToSeconds = (ms: Millis): Seconds => ms / 1000
