import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { connectNats, NatsServerError, startNatsServer } from '../../../actors/index.ts'
import { freePort, NATS_BIND_ATTEMPTS, portInUse } from '../../../actors/testing.ts'

/** Listens on a free port of 127.0.0.1 (as another process that took it would). */
function occupy(): Promise<{ port: number; server: Server }> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address()
      resolve({ port: typeof addr === 'object' && addr ? addr.port : 0, server })
    })
  })
}

/** A port picker that hands out `first` in order, then free ports; `calls` counts its picks. */
function picker(first: number[]) {
  const queue = [...first]
  const p = {
    calls: 0,
    pick: async () => {
      p.calls++
      return queue.shift() ?? (await freePort())
    },
  }
  return p
}

describe('actors/launcher/nats-server - ports taken between the pick and the bind', () => {
  let taken: { port: number; server: Server }
  before(async () => {
    taken = await occupy()
  })
  after(() => {
    taken.server.close()
  })

  it('nats-server - portInUse reads the port of a failed bind from the log, client or monitoring', () => {
    assert.equal(
      portInUse(
        '[FTL] Error listening on port: 127.0.0.1:40731, "listen tcp 127.0.0.1:40731: bind: address already in use"',
      ),
      40731,
    )
    assert.equal(
      portInUse(
        "[FTL] Can't start monitoring: can't listen to the monitor port: listen tcp 127.0.0.1:40657: bind: address already in use",
      ),
      40657,
    )
    assert.equal(portInUse('[INF] Server is ready'), undefined)
  })

  it('nats-server - a picked monitoring port that is taken is picked again, and the server comes up', async () => {
    const client = await freePort()
    const p = picker([client, taken.port])
    const nats = await startNatsServer({ pickPort: p.pick })
    try {
      assert.equal(p.calls, 4, 'one more pick of each port')
      assert.notEqual(nats.monitorUrl, `http://127.0.0.1:${taken.port}`)
      const health = await fetch(`${nats.monitorUrl}/healthz`)
      assert.equal(health.status, 200)
    } finally {
      await nats.stop()
    }
  })

  it('nats-server - a picked client port that is taken is picked again, and clients connect', async () => {
    const p = picker([taken.port])
    const nats = await startNatsServer({ monitorPort: false, pickPort: p.pick })
    try {
      assert.equal(p.calls, 2)
      assert.notEqual(nats.port, taken.port)
      const t = await connectNats({ servers: nats.url, run: 'ports', role: 'test', id: '0' })
      await t.flush()
      await t.close()
    } finally {
      await nats.stop()
    }
  })

  it('nats-server - a given port in use fails at once, naming the port', async () => {
    const p = picker([])
    await assert.rejects(
      startNatsServer({ port: taken.port, monitorPort: false, pickPort: p.pick }),
      (err: unknown) => {
        assert.ok(err instanceof NatsServerError)
        assert.equal(
          err.message,
          `nats-server cannot listen on port ${taken.port}: it is in use by another process`,
        )
        return true
      },
    )
    assert.equal(p.calls, 0)
  })

  it(`nats-server - picked ports taken ${NATS_BIND_ATTEMPTS} times in a row are an error, not an endless retry`, async () => {
    const p = picker(Array(NATS_BIND_ATTEMPTS + 1).fill(taken.port))
    await assert.rejects(startNatsServer({ monitorPort: false, pickPort: p.pick }), (err: unknown) => {
      assert.ok(err instanceof NatsServerError)
      assert.match(
        err.message,
        new RegExp(
          `^nats-server found a port it picked taken before it could bind it, ${NATS_BIND_ATTEMPTS} times in a row \\(last: ${taken.port}\\):\\n`,
        ),
      )
      return true
    })
    assert.equal(p.calls, NATS_BIND_ATTEMPTS)
  })
})
