/** Weight sync: versions of a run's weights in a blob store (JetStream's object store, or in process), announced on the transport. */
export * from './blob-store.ts'
export * from './errors.ts'
export * from './in-process-blobs.ts'
export * from './object-store-blobs.ts'
export * from './open-blob-store.ts'
export * from './weight-store.ts'
