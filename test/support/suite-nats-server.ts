import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { type NatsServer, startNatsServer } from '../../actors/index.ts'

/** The nats-server of a test suite, as its tests see it. */
export interface SuiteNatsServer {
  /**
   * The server's client URL.
   * @throws Error when read before the suite's `before` hook started the server.
   */
  readonly url: string
}

/**
 * One nats-server with JetStream for the tests of the enclosing `describe`: started in its
 * `before` hook (no monitoring port; the store in a fresh temporary folder named
 * `<storePrefix>XXXXXX`), stopped and its store removed in its `after` hook. Call it at the top of
 * the `describe` body.
 */
export function suiteNatsServer(storePrefix: string): SuiteNatsServer {
  let server: NatsServer | undefined
  let storeDir: string | undefined
  before(async () => {
    storeDir = mkdtempSync(join(tmpdir(), storePrefix))
    server = await startNatsServer({ monitorPort: false, storeDir })
  })
  after(async () => {
    await server?.stop()
    if (storeDir) rmSync(storeDir, { recursive: true, force: true })
  })
  return {
    get url() {
      if (!server) throw new Error(`the suite's nats-server (${storePrefix}) is not started yet`)
      return server.url
    },
  }
}
