import type { Transport } from '../runtime/index.ts'
import { InProcessTransport, NatsTransport } from '../runtime/index.ts'
import type { BlobStore } from './blob-store.ts'
import { InProcessBlobs } from './in-process-blobs.ts'
import { ObjectStoreBlobs } from './object-store-blobs.ts'

/**
 * The bucket `bucket` on the transport's medium: the JetStream object store over NATS, this
 * process's memory on an `InProcessTransport`. Created when absent.
 * @throws TypeError for a transport of another kind; the JetStream error when JetStream is off.
 */
export async function openBlobStore(transport: Transport, bucket: string): Promise<BlobStore> {
  if (transport instanceof NatsTransport) return ObjectStoreBlobs.open(transport.nc, bucket)
  if (transport instanceof InProcessTransport) return new InProcessBlobs(transport, bucket)
  throw new TypeError(`no blob store on a '${transport.kind}' transport (known: nats, in-process)`)
}
