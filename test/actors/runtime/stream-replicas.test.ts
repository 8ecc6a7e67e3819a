import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connectNats } from '../../../actors/index.ts'
import { streamReplicas } from '../../../actors/testing.ts'

/** What a server's INFO says of its cluster (the fields `streamReplicas` reads). */
const info = (fields: { cluster?: string; connect_urls?: string[] }) =>
  ({ info: { server_id: 'x', ...fields } }) as unknown as Parameters<typeof streamReplicas>[0]

describe('runtime - streamReplicas', () => {
  it('runtime - 3 on a cluster of three or more servers, else 1', () => {
    assert.equal(streamReplicas(info({})), 1)
    assert.equal(streamReplicas(info({ cluster: 'triad', connect_urls: ['a:4222'] })), 1)
    assert.equal(streamReplicas(info({ cluster: 'triad', connect_urls: ['a:4222', 'b:4222'] })), 1)
    assert.equal(streamReplicas(info({ cluster: 'triad', connect_urls: ['a:4222', 'b:4222', 'c:4222'] })), 3)
    assert.equal(streamReplicas(info({ cluster: 'triad', connect_urls: ['a', 'b', 'c', 'd', 'e'] })), 3)
    // connect_urls without a cluster name (a lone server advertising itself) is no cluster.
    assert.equal(streamReplicas(info({ connect_urls: ['a:4222', 'b:4222', 'c:4222'] })), 1)
    // Before the first INFO.
    assert.equal(streamReplicas({ info: undefined } as unknown as Parameters<typeof streamReplicas>[0]), 1)
  })

  it('runtime - 1 on a lone nats-server', async () => {
    const t = await connectNats({ servers: 'nats://127.0.0.1:4222', run: 'replicas', role: 'test', id: '0' })
    try {
      assert.equal(streamReplicas(t.nc), 1)
    } finally {
      await t.close()
    }
  })
})
