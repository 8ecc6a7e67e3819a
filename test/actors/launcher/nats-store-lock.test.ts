import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { type NatsServer, NatsServerError, startNatsServer } from '../../../actors/index.ts'
import {
  checkStoreFree,
  liveStoreHolder,
  NATS_STOP_GRACE_MS,
  NATS_STORE_ERROR,
  NATS_STORE_LOCK_FILE,
} from '../../../actors/testing.ts'

/**
 * One nats-server per JetStream store: the store's `triad-server.lock` names the server's own pid,
 * so a server left running (an orphan of a `triad run` that died) keeps its store from a second
 * one, which is refused naming that pid.
 */
describe('nats-server - the lock of its JetStream store', () => {
  const root = mkdtempSync(join(tmpdir(), 'triad-store-lock-'))
  const servers: NatsServer[] = []
  after(async () => {
    for (const s of servers) await s.stop()
    rmSync(root, { recursive: true, force: true })
  })

  it('a server holds its store; a second on the same store is refused naming its pid; after its stop the store is free', async () => {
    const store = join(root, 'store')
    const first = await startNatsServer({ storeDir: store, monitorPort: false })
    servers.push(first)
    const lock = JSON.parse(readFileSync(join(store, NATS_STORE_LOCK_FILE), 'utf8'))
    assert.equal(lock.pid, first.pid())
    assert.equal(lock.hostname, hostname())
    assert.equal(liveStoreHolder(store)?.pid, first.pid())
    await assert.rejects(
      startNatsServer({ storeDir: store, monitorPort: false }),
      (err: Error) =>
        err instanceof NatsServerError &&
        err.message ===
          `the JetStream store ${store} is held by nats-server pid ${first.pid()}, which still runs: a second server on it would corrupt it; stop that one first (kill ${first.pid()})`,
    )
    await first.stop()
    assert.equal(existsSync(join(store, NATS_STORE_LOCK_FILE)), false)
    const second = await startNatsServer({ storeDir: store, monitorPort: false })
    servers.push(second)
    assert.equal(liveStoreHolder(store)?.pid, second.pid())
    // A restart of the same server (its supervision) takes the lock again under its new pid.
    await second.kill()
    await second.restart()
    assert.equal(liveStoreHolder(store)?.pid, second.pid())
  })

  it('a stale lock (its pid gone, or not a lock) does not hold the store', () => {
    const store = mkdtempSync(join(root, 'stale-'))
    writeFileSync(
      join(store, NATS_STORE_LOCK_FILE),
      JSON.stringify({ pid: 2 ** 22 + 1, hostname: hostname() }),
    )
    assert.equal(liveStoreHolder(store), undefined)
    checkStoreFree(store)
    writeFileSync(join(store, NATS_STORE_LOCK_FILE), 'not json')
    assert.equal(liveStoreHolder(store), undefined)
    // Another host's lock cannot be checked from here and is not one this host's servers share.
    writeFileSync(
      join(store, NATS_STORE_LOCK_FILE),
      JSON.stringify({ pid: process.pid, hostname: 'elsewhere' }),
    )
    assert.equal(liveStoreHolder(store), undefined)
  })
})

describe('nats-server - a stop that SIGTERM does not end', () => {
  it(`a server that ignores SIGTERM (stopped, as one wedged on a full disk) is killed after NATS_STOP_GRACE_MS (${NATS_STOP_GRACE_MS} ms), and stop waits for its exit`, async () => {
    const server = await startNatsServer({ monitorPort: false })
    const pid = server.pid()!
    process.kill(pid, 'SIGSTOP')
    const t0 = performance.now()
    await server.stop()
    const took = performance.now() - t0
    assert.ok(took >= NATS_STOP_GRACE_MS - 50, `stopped after ${took} ms`)
    assert.ok(took < NATS_STOP_GRACE_MS + 3_000, `stopped after ${took} ms`)
    assert.throws(() => process.kill(pid, 0), /ESRCH/)
  })
})

describe('nats-server - a JetStream store that cannot take more', () => {
  it('onStoreError: the server line that says so, once, when a store on a small tmpfs fills', async () => {
    const root = mkdtempSync(join(tmpdir(), 'triad-store-full-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', root])
    const server = await startNatsServer({ storeDir: join(root, 'store'), monitorPort: false })
    const lines: string[] = []
    let said: () => void = () => {}
    const saidIt = new Promise<void>((resolve) => {
      said = resolve
    })
    server.onStoreError((line) => {
      lines.push(line)
      said()
    })
    const nc = await connect({ servers: server.url })
    try {
      await (await jetstreamManager(nc)).streams.add({ name: 'S', subjects: ['s.>'] })
      const js = jetstream(nc)
      const payload = new Uint8Array(64 * 1024)
      await assert.rejects(async () => {
        for (let n = 0; n < 100; n++) await js.publish('s.x', payload)
      }, /insufficient resources/)
      await saidIt
      assert.equal(lines.length, 1)
      assert.match(lines[0]!, NATS_STORE_ERROR)
      assert.match(lines[0]!, /\[ERR\] JetStream resource limits exceeded for server$/)
    } finally {
      await nc.close()
      await server.stop()
      execFileSync('umount', ['-l', root])
      rmSync(root, { recursive: true, force: true })
    }
  })
})
