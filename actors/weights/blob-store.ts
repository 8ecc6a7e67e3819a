/**
 * Named binary objects of one bucket, larger than a message: the medium of a run's weights
 * (`weight-store.ts`, one object per version, `<model>-v<version>`) and of its tokenizer
 * (`actors/node/run-tokenizer.ts`). Versions live in the names; the store only keeps objects.
 *
 * Two implementations (`open-blob-store.ts` picks one from the transport): a JetStream object
 * store bucket (`object-store-blobs.ts`, shared by every process of a run, kept in the server's
 * JetStream store) and a map in the process (`in-process-blobs.ts`, shared by the roles of a
 * one-process run). Both give each `get` its own copy of the bytes.
 */

/** What the store says about one object. */
export interface BlobInfo {
  name: string
  /** Size of the object, bytes. */
  size: number
  description?: string
}

/** A bucket of named objects. */
export interface BlobStore {
  /** The bucket's name. */
  readonly bucket: string
  /** Writes (or replaces) the object `name`. */
  put(name: string, bytes: Uint8Array, description?: string): Promise<void>
  /** The bytes of `name` (a copy the caller owns), or null when there is no such object. */
  get(name: string): Promise<Uint8Array | null>
  /** The object `name`, or undefined. */
  info(name: string): Promise<BlobInfo | undefined>
  /** Every object in the bucket, in no particular order. */
  list(): Promise<BlobInfo[]>
  /** Removes `name`; removing a missing object is not an error. */
  delete(name: string): Promise<void>
}
