/**
 * Errors of the weight store (`actors/weights/`). Each class sets `name`, keeps `cause` and carries
 * the data a caller needs to act on it.
 */

/** An announced weights object is not (or no longer) in the bucket. */
export class WeightsNotFoundError extends Error {
  override name = 'WeightsNotFoundError'
  /** Object store bucket. */
  readonly bucket: string
  /** Object name. */
  readonly key: string
  constructor(bucket: string, key: string, options?: { cause?: unknown }) {
    super(`weights object '${key}' is not in bucket '${bucket}' (pruned or never written)`, options)
    this.bucket = bucket
    this.key = key
  }
}

/** A weights object that cannot be decoded (not safetensors, or a non-float tensor). */
export class WeightsFormatError extends Error {
  override name = 'WeightsFormatError'
  readonly bucket: string
  readonly key: string
  constructor(bucket: string, key: string, message: string, options?: { cause?: unknown }) {
    super(`weights object '${key}' in bucket '${bucket}': ${message}`, options)
    this.bucket = bucket
    this.key = key
  }
}

/** An object of a blob store bucket that could not be read whole (chunks missing, or a digest that does not match). */
export class BlobReadError extends Error {
  override name = 'BlobReadError'
  /** Bucket of the object. */
  readonly bucket: string
  /** Object name. */
  readonly object: string
  constructor(bucket: string, object: string, message: string, options?: { cause?: unknown }) {
    super(`object '${object}' of bucket '${bucket}': ${message}`, options)
    this.bucket = bucket
    this.object = object
  }
}
