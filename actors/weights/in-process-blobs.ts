import type { InProcessTransport } from '../runtime/index.ts'
import type { BlobInfo, BlobStore } from './blob-store.ts'

interface Blob {
  bytes: Uint8Array
  description?: string
}

/** Every bucket of every in-process transport (the roles of one process share its transport). */
const buckets = new WeakMap<InProcessTransport, Map<string, Map<string, Blob>>>()

/**
 * A bucket in this process's memory, shared by every role on the same `InProcessTransport`. Bytes
 * are copied in and out, so no writer or reader ever shares an array with another: the same
 * isolation as a store across the network.
 */
export class InProcessBlobs implements BlobStore {
  private readonly objects: Map<string, Blob>
  constructor(
    transport: InProcessTransport,
    readonly bucket: string,
  ) {
    let all = buckets.get(transport)
    if (!all) {
      all = new Map()
      buckets.set(transport, all)
    }
    let objects = all.get(bucket)
    if (!objects) {
      objects = new Map()
      all.set(bucket, objects)
    }
    this.objects = objects
  }

  async put(name: string, bytes: Uint8Array, description?: string): Promise<void> {
    this.objects.set(name, { bytes: bytes.slice(), description })
  }

  async get(name: string): Promise<Uint8Array | null> {
    return this.objects.get(name)?.bytes.slice() ?? null
  }

  async info(name: string): Promise<BlobInfo | undefined> {
    const b = this.objects.get(name)
    return b && { name, size: b.bytes.length, description: b.description }
  }

  async list(): Promise<BlobInfo[]> {
    return [...this.objects].map(([name, b]) => ({ name, size: b.bytes.length, description: b.description }))
  }

  async delete(name: string): Promise<void> {
    this.objects.delete(name)
  }
}
