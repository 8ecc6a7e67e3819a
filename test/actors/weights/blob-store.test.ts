import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { jetstream } from '@nats-io/jetstream'
import {
  connectNats,
  InProcessTransport,
  type NatsServer,
  startNatsServer,
  type Transport,
} from '../../../actors/index.ts'
import { BlobReadError, InProcessBlobs, openBlobStore } from '../../../actors/testing.ts'

const bytes = (...values: number[]) => Uint8Array.from(values)
const byName = <T extends { name: string }>(list: T[]) =>
  [...list].sort((a, b) => a.name.localeCompare(b.name))

/** A medium of the blob store: two transports that must see the same buckets (two processes, or two roles of one). */
interface Medium {
  a: Transport
  b: Transport
  close(): Promise<void>
}

/** One contract, two stores: JetStream's object store on a real server, and process memory. */
function contract(name: string, open: () => Promise<Medium>) {
  describe(`actors/weights/blob-store contract - ${name}`, () => {
    let m: Medium
    before(async () => {
      m = await open()
    })
    after(async () => {
      await m.close()
    })

    it('blob-store - put then get gives the bytes back, to every party of the run', async () => {
      const store = await openBlobStore(m.a, 'blobs-1')
      assert.equal(store.bucket, 'blobs-1')
      await store.put('x', bytes(1, 2, 3), 'three bytes')
      assert.deepEqual(await store.get('x'), bytes(1, 2, 3))
      const other = await openBlobStore(m.b, 'blobs-1')
      assert.deepEqual(await other.get('x'), bytes(1, 2, 3))
      assert.deepEqual(await other.info('x'), { name: 'x', size: 3, description: 'three bytes' })
    })

    it('blob-store - a put replaces the object; info and list follow', async () => {
      const store = await openBlobStore(m.a, 'blobs-2')
      await store.put('a', bytes(1))
      await store.put('b', bytes(1, 2))
      await store.put('a', bytes(9, 9, 9, 9))
      assert.deepEqual(await store.get('a'), bytes(9, 9, 9, 9))
      assert.deepEqual(
        byName(await store.list()).map((i) => [i.name, i.size]),
        [
          ['a', 4],
          ['b', 2],
        ],
      )
    })

    it('blob-store - a missing object is null or undefined, and deleting it is no error', async () => {
      const store = await openBlobStore(m.a, 'blobs-3')
      assert.equal(await store.get('nothing'), null)
      assert.equal(await store.info('nothing'), undefined)
      await store.delete('nothing')
      assert.deepEqual(await store.list(), [])
    })

    it('blob-store - delete removes the object from get, info and list', async () => {
      const store = await openBlobStore(m.a, 'blobs-4')
      await store.put('gone', bytes(1, 2))
      await store.put('kept', bytes(3))
      await store.delete('gone')
      assert.equal(await store.get('gone'), null)
      assert.equal(await store.info('gone'), undefined)
      assert.deepEqual(
        (await store.list()).map((i) => i.name),
        ['kept'],
      )
    })

    it('blob-store - buckets are separate', async () => {
      await (await openBlobStore(m.a, 'blobs-5a')).put('same', bytes(1))
      await (await openBlobStore(m.a, 'blobs-5b')).put('same', bytes(2))
      assert.deepEqual(await (await openBlobStore(m.b, 'blobs-5a')).get('same'), bytes(1))
      assert.deepEqual(await (await openBlobStore(m.b, 'blobs-5b')).get('same'), bytes(2))
    })

    it('blob-store - writer and readers never share an array', async () => {
      const store = await openBlobStore(m.a, 'blobs-6')
      const written = bytes(5, 6, 7)
      await store.put('w', written)
      written[0] = 0
      const first = (await store.get('w'))!
      first[1] = 0
      assert.deepEqual(await store.get('w'), bytes(5, 6, 7))
    })

    it('blob-store - an object larger than one NATS message (1 MiB) round-trips', async () => {
      const store = await openBlobStore(m.a, 'blobs-7')
      const big = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 31) & 0xff)
      await store.put('big', big)
      assert.deepEqual(await (await openBlobStore(m.b, 'blobs-7')).get('big'), big)
    })
  })
}

contract('JetStream object store on a real nats-server', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'triad-blobs-'))
  const nats: NatsServer = await startNatsServer({ storeDir: dir, monitorPort: false })
  const a = await connectNats({ servers: nats.url, run: 'blobs', role: 'a', id: '0' })
  const b = await connectNats({ servers: nats.url, run: 'blobs', role: 'b', id: '0' })
  return {
    a,
    b,
    close: async () => {
      await a.close()
      await b.close()
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
})

contract('in process', async () => {
  const t = new InProcessTransport()
  return { a: t, b: t, close: () => t.close() }
})

describe('actors/weights/object-store-blobs - reads checked against the stored digest', () => {
  it('object-store-blobs - an object whose digest does not match is a BlobReadError naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-blobs-digest-'))
    const nats = await startNatsServer({ storeDir: dir, monitorPort: false })
    const t = await connectNats({ servers: nats.url, run: 'blobs', role: 'a', id: '0' })
    try {
      const store = await openBlobStore(t, 'blobs-digest')
      await store.put('abc', bytes(1, 2, 3))
      // Rewrite the object's metadata with the digest of other bytes ('YWJj' is 'abc' in base64url).
      const js = jetstream(t.nc as never)
      const streams = (await js.jetstreamManager()).streams
      const m = await streams.getMessage('OBJ_blobs-digest', { last_by_subj: '$O.blobs-digest.M.YWJj' })
      const info = m!.json<{ digest: string }>()
      const wrong = `SHA-256=${Buffer.alloc(32).toString('base64url')}=`
      await js.publish('$O.blobs-digest.M.YWJj', JSON.stringify({ ...info, digest: wrong }))
      await assert.rejects(store.get('abc'), (err: unknown) => {
        assert.ok(err instanceof BlobReadError)
        assert.equal(err.object, 'abc')
        assert.equal(err.bucket, 'blobs-digest')
        assert.match(
          err.message,
          /^object 'abc' of bucket 'blobs-digest': digest mismatch: stored SHA-256=A+/,
        )
        return true
      })
    } finally {
      await t.close()
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('actors/weights/open-blob-store - selection from the transport', () => {
  it('open-blob-store - each transport gets its own medium; another kind is an error naming the known ones', async () => {
    const one = new InProcessTransport()
    const two = new InProcessTransport()
    assert.ok((await openBlobStore(one, 'sel')) instanceof InProcessBlobs)
    await (await openBlobStore(one, 'sel')).put('x', bytes(1))
    // Two in-process transports are two separate runs: nothing is shared between them.
    assert.equal(await (await openBlobStore(two, 'sel')).get('x'), null)
    const other = { kind: 'carrier-pigeon' } as unknown as Transport
    await assert.rejects(
      openBlobStore(other, 'sel'),
      /no blob store on a 'carrier-pigeon' transport \(known: nats, in-process\)/,
    )
  })
})
