import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { jetstreamManager } from '@nats-io/jetstream'
import {
  connectNats,
  InProcessTransport,
  type NatsServer,
  type NatsTransport,
  startNatsServer,
  type Transport,
} from '../../../actors/index.ts'
import {
  openBlobStore,
  WeightStore,
  WeightsFormatError,
  WeightsNotFoundError,
  weightsKey,
} from '../../../actors/testing.ts'
import { ConfigError } from '../../../gpu/index.ts'
import {
  type Envelope,
  MessageRegistry,
  Subjects,
  WeightsPublished,
  weightsBucket,
} from '../../../protocols/index.ts'

const weightsOf = (scale: number) => ({
  embed: Float32Array.from({ length: 12 }, (_, i) => i * scale),
  'layers.0.qkv': Float32Array.from({ length: 6 }, (_, i) => -i / scale),
  final_norm: Float32Array.of(1, 1, 1),
})

/** Resolves with the first value `register` delivers, or rejects after `ms`. */
function within<T>(ms: number, what: string, register: (deliver: (v: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
    register((v) => {
      clearTimeout(t)
      resolve(v)
    })
  })
}

/** The same weight-store tests on both media: JetStream's object store on a real server, and in process. */
const media: { name: string; open: () => Promise<{ transport: Transport; close: () => Promise<void> }> }[] = [
  {
    name: 'the JetStream object store',
    open: async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'triad-weights-'))
      const nats: NatsServer = await startNatsServer({ storeDir: dir, monitorPort: false })
      const transport = await connectNats({ servers: nats.url, run: 'ws', role: 'test', id: '0' })
      return {
        transport,
        close: async () => {
          await transport.close()
          await nats.stop()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'process memory',
    open: async () => {
      const transport = new InProcessTransport()
      return { transport, close: () => transport.close() }
    },
  },
]

for (const medium of media)
  describe(`actors/weights/weight-store - weights in ${medium.name}`, () => {
    let transport: Transport
    let close: () => Promise<void>
    before(async () => {
      ;({ transport, close } = await medium.open())
    })
    after(async () => {
      await close()
    })

    it('weight-store - publish writes the object, announces the version, and load gives the same arrays', async () => {
      const store = await WeightStore.open(transport, 'ws')
      const heard = within<Envelope>(5_000, 'weights.published', (deliver) => {
        transport.subscribe(Subjects.weights('ws', 'policy'), {
          accepts: new MessageRegistry([WeightsPublished]),
          handler: deliver,
        })
      })
      const w = weightsOf(0.5)
      const sent = await store.publish(transport, 'policy', 1, w)
      assert.deepEqual(sent, {
        model: 'policy',
        version: 1,
        bucket: weightsBucket('ws'),
        key: weightsKey('policy', 1),
        bytes: sent.bytes,
      })
      assert.ok(sent.bytes > 21 * 4)
      const announced = await heard
      assert.deepEqual(announced.payload, sent)
      const loaded = await store.load(announced.payload as typeof sent)
      assert.deepEqual(Object.keys(loaded).sort(), Object.keys(w).sort())
      for (const [name, data] of Object.entries(w)) assert.deepEqual(loaded[name], data)
    })

    it('weight-store - keeps only the newest versions, and a pruned version is a typed error', async () => {
      const store = await WeightStore.open(transport, 'prune', { keep: 2 })
      const sent = []
      for (const v of [0, 1, 2, 3]) sent.push(await store.put('policy', v, weightsOf(v + 1)))
      await store.put('reward', 7, weightsOf(9))
      assert.deepEqual(await store.versions('policy'), [2, 3])
      assert.deepEqual(await store.versions('reward'), [7])
      await assert.rejects(store.load(sent[0]!), WeightsNotFoundError)
      assert.deepEqual((await store.load(sent[3]!)).embed, weightsOf(4).embed)
      assert.equal((await store.latest('policy'))?.version, 3)
      assert.equal((await store.latest('policy', (v) => v % 2 === 0))?.version, 2)
      assert.equal(await store.latest('policy', (v) => v > 10), undefined)
      assert.equal(await (await WeightStore.open(transport, 'empty')).latest('policy'), undefined)
    })

    it('weight-store - bad arguments and a corrupt object are typed errors', async () => {
      await assert.rejects(WeightStore.open(transport, 'ws', { keep: 0 }), ConfigError)
      const store = await WeightStore.open(transport, 'ws')
      await assert.rejects(store.put('policy', -1, weightsOf(1)), ConfigError)
      await assert.rejects(store.put('pol.icy', 1, weightsOf(1)), ConfigError)
      const os = await openBlobStore(transport, weightsBucket('ws'))
      await os.put(weightsKey('policy', 99), new TextEncoder().encode('not safetensors'))
      await assert.rejects(store.load({ key: weightsKey('policy', 99) }), WeightsFormatError)
    })
  })

describe('actors/weights/weight-store - JetStream consumers on the weights bucket', () => {
  let dir: string
  let nats: NatsServer
  let transport: NatsTransport
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'triad-weights-consumers-'))
    nats = await startNatsServer({ storeDir: dir, monitorPort: false })
    transport = await connectNats({ servers: nats.url, run: 'wc', role: 'test', id: '0' })
  })
  after(async () => {
    await transport.close()
    await nats.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('weight-store - publishing, loading and asking for the latest version leave no consumer behind', async () => {
    const store = await WeightStore.open(transport, 'wc', { keep: 2 })
    const jsm = await jetstreamManager(transport.nc as never)
    const stream = `OBJ_${weightsBucket('wc')}`
    const consumers = async () => (await jsm.consumers.list(stream).next()).length
    // Before anything is published: the rollout node polls `latest` until the learner's first weights.
    for (let i = 0; i < 3; i++) assert.equal(await store.latest('policy'), undefined)
    assert.equal(await consumers(), 0, 'consumers after latest() on an empty bucket')
    const counts: number[] = []
    for (let v = 0; v < 12; v++) {
      const sent = await store.publish(transport, 'policy', v, weightsOf(v + 1))
      // Four engines load each version at once, and each asks for the latest as a restarted one does.
      const loaded = await Promise.all([0, 1, 2, 3].map(() => store.load(sent)))
      for (const w of loaded) assert.deepEqual(w.embed, weightsOf(v + 1).embed)
      assert.equal((await store.latest('policy'))?.version, v)
      assert.deepEqual(await store.versions('policy'), v === 0 ? [0] : [v - 1, v])
      counts.push(await consumers())
    }
    assert.deepEqual(counts, Array(12).fill(0), 'consumers on the bucket after each version')
  })
})
