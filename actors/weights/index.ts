/** Weight sync: versions of a run's weights in a blob store (JetStream's object store, or in process), announced on the transport. */
export type { BlobInfo, BlobStore } from './blob-store.ts'
export { BlobReadError, WeightsFormatError, WeightsNotFoundError } from './errors.ts'
export { InProcessBlobs } from './in-process-blobs.ts'
export { ObjectStoreBlobs } from './object-store-blobs.ts'
export { openBlobStore } from './open-blob-store.ts'
export {
  type WeightMap,
  WeightStore,
  type WeightStoreOptions,
  type WeightsAnnouncement,
  weightsKey,
} from './weight-store.ts'
