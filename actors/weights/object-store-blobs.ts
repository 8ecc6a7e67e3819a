import { type ObjectStore, Objm } from '@nats-io/obj'
import type { NatsConnection } from '@nats-io/transport-node'
import type { BlobInfo, BlobStore } from './blob-store.ts'

/** A bucket of the JetStream object store (`@nats-io/obj`): objects chunked into a stream on the server. */
export class ObjectStoreBlobs implements BlobStore {
  private constructor(
    private readonly os: ObjectStore,
    readonly bucket: string,
  ) {}

  /**
   * Opens the bucket, creating it when absent.
   * @throws the JetStream error when JetStream is off on the server.
   */
  static async open(nc: NatsConnection, bucket: string): Promise<ObjectStoreBlobs> {
    // Cast: @nats-io/obj pins its own copy of nats-core; the connection is the same at run time.
    return new ObjectStoreBlobs(await new Objm(nc as never).create(bucket), bucket)
  }

  async put(name: string, bytes: Uint8Array, description?: string): Promise<void> {
    await this.os.putBlob(description === undefined ? { name } : { name, description }, bytes)
  }

  async get(name: string): Promise<Uint8Array | null> {
    const b = await this.os.getBlob(name)
    // A plain Uint8Array over the same bytes (the client returns a Node Buffer).
    return b && new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
  }

  async info(name: string): Promise<BlobInfo | undefined> {
    const i = await this.os.info(name)
    return i && !i.deleted ? { name: i.name, size: i.size, description: i.description } : undefined
  }

  async list(): Promise<BlobInfo[]> {
    return (await this.os.list())
      .filter((i) => !i.deleted)
      .map((i) => ({ name: i.name, size: i.size, description: i.description }))
  }

  async delete(name: string): Promise<void> {
    await this.os.delete(name).catch(() => undefined)
  }
}
