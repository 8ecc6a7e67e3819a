import { createHash } from 'node:crypto'
import {
  type Consumer,
  DeliverPolicy,
  type JetStreamClient,
  jetstream,
  type OrderedConsumerOptions,
} from '@nats-io/jetstream'
import { type ObjectInfo, type ObjectStore, Objm } from '@nats-io/obj'
import type { NatsConnection } from '@nats-io/transport-node'
import { streamReplicas } from '../runtime/index.ts'
import type { BlobInfo, BlobStore } from './blob-store.ts'
import { BlobReadError } from './errors.ts'

/** How long one pull of an object's chunks (or of the bucket's entries) may wait for them, ms. */
const FETCH_EXPIRES_MS = 10_000
/**
 * Backstop for a reader that dies mid-read, ms: the server removes a consumer of ours that nobody
 * pulls from for this long. Every read deletes its consumer itself when it ends.
 */
const CONSUMER_INACTIVE_MS = 30_000
/** Reads of an object that is replaced while it is being read, before giving up. */
const READ_ATTEMPTS = 3

/** The metadata the object store keeps for one object (the server's field names). */
interface ObjectMeta {
  name: string
  /** Id of the object's chunk subject, `$O.<bucket>.C.<nuid>`. */
  nuid: string
  /** Bytes. */
  size: number
  chunks: number
  /** `SHA-256=` and the base64url digest of the whole object. */
  digest: string
  deleted?: boolean
  description?: string
}

/**
 * A bucket of the JetStream object store (`@nats-io/obj`): objects chunked into the stream
 * `OBJ_<bucket>` on the server.
 *
 * Writes, `info` and `delete` go through `@nats-io/obj`. `get` and `list` read the stream here,
 * each through one ordered consumer that it deletes when it is done: `@nats-io/obj`'s own `get`
 * and `list` leave their consumer on the server after every call (it only unsubscribes, and the
 * server keeps the consumer for its 5-minute inactivity threshold), so a run that loads weights
 * and polls for the latest version piles up hundreds of consumers on its weights bucket.
 */
export class ObjectStoreBlobs implements BlobStore {
  private constructor(
    private readonly os: ObjectStore,
    private readonly js: JetStreamClient,
    readonly bucket: string,
  ) {}

  /**
   * Opens the bucket, creating it when absent (3 replicas on a cluster of three or more servers).
   * @throws the JetStream error when JetStream is off on the server.
   */
  static async open(nc: NatsConnection, bucket: string): Promise<ObjectStoreBlobs> {
    // Cast: @nats-io/obj pins its own copy of nats-core; the connection is the same at run time.
    // On a cluster of three or more servers, 3 replicas: the weights survive a server taken away.
    const os = await new Objm(nc as never).create(bucket, { replicas: streamReplicas(nc) })
    return new ObjectStoreBlobs(os, jetstream(nc as never), bucket)
  }

  /** The stream that holds the bucket. */
  private get stream(): string {
    return `OBJ_${this.bucket}`
  }

  async put(name: string, bytes: Uint8Array, description?: string): Promise<void> {
    await this.os.putBlob(description === undefined ? { name } : { name, description }, bytes)
  }

  /**
   * The bytes of `name`, checked against the digest the store keeps, or null when there is no
   * such object (or it is deleted while being read).
   * @throws BlobReadError when chunks are missing or the digest does not match.
   */
  async get(name: string): Promise<Uint8Array | null> {
    for (let attempt = 1; ; attempt++) {
      const info = await this.os.info(name)
      if (!info || info.deleted) return null
      const bytes = await this.readChunks(info)
      if (bytes) return bytes
      // Fewer chunks than the metadata promised: the object was deleted or replaced meanwhile.
      const now = await this.os.info(name)
      if (!now || now.deleted) return null
      if (now.nuid === info.nuid || attempt >= READ_ATTEMPTS)
        throw new BlobReadError(
          this.bucket,
          name,
          `fewer than its ${info.chunks} chunks arrived within ${FETCH_EXPIRES_MS} ms`,
        )
    }
  }

  /** The object's bytes, or undefined when fewer chunks than `info.chunks` arrive. */
  private async readChunks(info: ObjectInfo): Promise<Uint8Array | undefined> {
    const out = new Uint8Array(info.size)
    if (info.size === 0) return out
    const hash = createHash('sha256')
    let offset = 0
    let received = 0
    const complete = await this.withConsumer(
      { filter_subjects: `$O.${this.bucket}.C.${info.nuid}`, deliver_policy: DeliverPolicy.All },
      async (consumer) => {
        while (received < info.chunks) {
          const batch = await consumer.fetch({
            max_messages: info.chunks - received,
            expires: FETCH_EXPIRES_MS,
          })
          let n = 0
          for await (const m of batch) {
            if (offset + m.data.length > out.length)
              throw new BlobReadError(this.bucket, info.name, `chunks exceed its size of ${info.size} bytes`)
            out.set(m.data, offset)
            hash.update(m.data)
            offset += m.data.length
            n++
          }
          if (n === 0) return false
          received += n
        }
        return true
      },
    )
    if (!complete) return undefined
    if (offset !== info.size)
      throw new BlobReadError(this.bucket, info.name, `got ${offset} of its ${info.size} bytes`)
    const expected = Buffer.from(info.digest.replace(/^SHA-256=/, ''), 'base64')
    const actual = hash.digest()
    if (!info.digest.startsWith('SHA-256=') || !actual.equals(expected))
      throw new BlobReadError(
        this.bucket,
        info.name,
        `digest mismatch: stored ${info.digest}, computed SHA-256=${actual.toString('base64url')}`,
      )
    return out
  }

  async info(name: string): Promise<BlobInfo | undefined> {
    const i = await this.os.info(name)
    return i && !i.deleted ? { name: i.name, size: i.size, description: i.description } : undefined
  }

  /** Every object in the bucket: the newest metadata of each name, read through one consumer. */
  async list(): Promise<BlobInfo[]> {
    const metas = await this.withConsumer(
      { filter_subjects: `$O.${this.bucket}.M.>`, deliver_policy: DeliverPolicy.LastPerSubject },
      async (consumer) => {
        const out: ObjectMeta[] = []
        // The entries there were when the consumer was made; later ones are not part of this list.
        let pending = (await consumer.info(true)).num_pending
        while (pending > 0) {
          const batch = await consumer.fetch({ max_messages: pending, expires: FETCH_EXPIRES_MS })
          let n = 0
          for await (const m of batch) {
            out.push(m.json<ObjectMeta>())
            n++
          }
          if (n === 0) break
          pending -= n
        }
        return out
      },
    )
    return metas
      .filter((i) => !i.deleted)
      .map((i) => ({ name: i.name, size: i.size, description: i.description }))
  }

  async delete(name: string): Promise<void> {
    await this.os.delete(name).catch(() => undefined)
  }

  /** Runs `read` with an ordered consumer on the bucket's stream, and deletes the consumer after. */
  private async withConsumer<T>(
    options: Partial<OrderedConsumerOptions>,
    read: (consumer: Consumer) => Promise<T>,
  ): Promise<T> {
    const consumer = await this.js.consumers.get(this.stream, {
      ...options,
      inactive_threshold: CONSUMER_INACTIVE_MS,
    })
    try {
      return await read(consumer)
    } finally {
      await consumer.delete().catch(() => undefined)
    }
  }
}
