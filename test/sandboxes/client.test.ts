import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { RunCodeResponse, SandboxHealth } from '../../protocols/index.ts'
import { SandboxClient } from '../../sandboxes/index.ts'
import { SandboxHttpError, SandboxUnreachableError } from '../../sandboxes/testing.ts'

const HEALTH: SandboxHealth = {
  status: 'ok',
  backend: 'local',
  isolation: 'bwrap',
  languages: ['python'],
  running: 0,
  queued: 0,
}
const OK: RunCodeResponse = {
  status: 'Success',
  message: '',
  compile_result: null,
  run_result: { status: 'Finished', execution_time: 0.01, return_code: 0, stdout: '1\n', stderr: '' },
  files: {},
}

/** A scripted stub of the sandbox: `plan` gives the status code of each /run_code hit in turn. */
let plan: number[] = []
let hits = 0
let inFlight = 0
let maxInFlight = 0
let server: Server
let url = ''

before(async () => {
  server = createServer((req, res) => {
    if (req.url === '/health') {
      res.setHeader('content-type', 'application/json')
      return res.end(JSON.stringify(HEALTH))
    }
    req.resume()
    req.on('end', () => {
      const code = plan[hits++] ?? 200
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      setTimeout(() => {
        inFlight--
        res.statusCode = code
        res.setHeader('content-type', 'application/json')
        res.end(
          code === 200
            ? JSON.stringify(OK)
            : JSON.stringify({ status: 'SandboxError', message: `http ${code}` }),
        )
      }, 15)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(() => new Promise<void>((r) => server.close(() => r())))

const reset = (p: number[]) => {
  plan = p
  hits = 0
  maxInFlight = 0
}

describe('sandboxes/client', () => {
  it('client - connect fails loudly when nothing listens at the URL', async () => {
    const probe = createServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((r) => probe.close(() => r()))
    await assert.rejects(
      SandboxClient.connect(`http://127.0.0.1:${port}`, { retries: 1, backoffMs: 1 }),
      (e: unknown) =>
        e instanceof SandboxUnreachableError &&
        e.url === `http://127.0.0.1:${port}` &&
        /unreachable.*ECONNREFUSED/.test(e.message),
    )
  })

  it('client - connect reads the health of the sandbox', async () => {
    const c = await SandboxClient.connect(url)
    assert.deepEqual(c.health, HEALTH)
  })

  it('client - transient 503 and 502 are retried with backoff until success', async () => {
    reset([503, 502, 200])
    const c = await SandboxClient.connect(url, { backoffMs: 1 })
    const r = await c.runCode({ code: 'print(1)', language: 'python' })
    assert.equal(r.status, 'Success')
    assert.equal(hits, 3)
  })

  it('client - a refused request (422) is not retried and throws SandboxHttpError', async () => {
    reset([422])
    const c = await SandboxClient.connect(url, { backoffMs: 1 })
    await assert.rejects(
      c.runCode({ code: 'x', language: 'python' }),
      (e: unknown) => e instanceof SandboxHttpError && e.statusCode === 422,
    )
    assert.equal(hits, 1)
  })

  it('client - retries are bounded: the last transient failure is thrown', async () => {
    reset([503, 503, 503])
    const c = await SandboxClient.connect(url, { retries: 2, backoffMs: 1 })
    await assert.rejects(
      c.runCode({ code: 'x', language: 'python' }),
      (e: unknown) => e instanceof SandboxHttpError && e.statusCode === 503,
    )
    assert.equal(hits, 3)
  })

  it('client - at most `concurrency` requests are in flight', async () => {
    reset([])
    const c = await SandboxClient.connect(url, { concurrency: 3 })
    const all = await Promise.all(
      Array.from({ length: 12 }, () => c.runCode({ code: 'print(1)', language: 'python' })),
    )
    assert.equal(all.length, 12)
    assert.equal(hits, 12)
    assert.equal(maxInFlight, 3)
  })
})
