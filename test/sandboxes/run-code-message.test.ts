import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connectNats, type NatsTransport, remoteActor, startActorSystem } from '../../actors/index.ts'
import { exposeSandbox } from '../../bin/commands/sandbox.ts'
import {
  type Envelope,
  RemoteError,
  type RunCodeResponse,
  SandboxRunCode,
  Subjects,
} from '../../protocols/index.ts'
import { DEFAULT_LIMITS, LocalBackend } from '../../sandboxes/index.ts'
import { sandboxReplies } from '../../sandboxes/testing.ts'

const run = `sbx${process.pid}`
const limits = { ...DEFAULT_LIMITS, concurrency: 2, outputBytes: 64 * 1024 }
const backend = new LocalBackend({ limits, firstUid: 61700 })
const system = startActorSystem({ name: 'sandbox-test' })
let server: NatsTransport
let client: NatsTransport
let exposed: Awaited<ReturnType<typeof exposeSandbox>>

before(async () => {
  await backend.start()
  server = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'sandbox', id: 'server' })
  client = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'env', id: 'client' })
  exposed = await exposeSandbox(system, server, run, backend, limits)
})

after(async () => {
  await exposed.stop()
  await system.stop()
  await server.close()
  await client.close()
  await backend.close()
})

describe('sandboxes/run-code-message', () => {
  it('nats actor - sandbox.run_code answers sandbox.code_result with the same fields as HTTP', async () => {
    const sandbox = remoteActor(client, Subjects.sandbox(run), { replies: sandboxReplies })
    const reply: Envelope = await sandbox.ask(
      SandboxRunCode.make({ code: 'print(6 * 7)', language: 'python' }),
      30_000,
    )
    assert.equal(reply.type, 'sandbox.code_result')
    const body = reply.payload as RunCodeResponse
    assert.equal(body.status, 'Success')
    assert.equal(body.run_result?.stdout, '42\n')
    assert.equal(body.compile_result, null)
    const slow = await sandbox.ask(
      SandboxRunCode.make({ code: 'import time\ntime.sleep(5)', language: 'python', run_timeout: 1 }),
      30_000,
    )
    assert.equal((slow.payload as RunCodeResponse).status, 'Failed')
    assert.equal((slow.payload as RunCodeResponse).run_result?.status, 'TimeLimitExceeded')
    assert.equal(exposed.stats().handled, 2)
  })

  it('nats actor - an unsupported language is an invalid_message error reply; the next request succeeds', async () => {
    const sandbox = remoteActor(client, Subjects.sandbox(run), { replies: sandboxReplies })
    await assert.rejects(
      sandbox.ask({ v: '1.0', type: 'sandbox.run_code', payload: { code: 'x', language: 'cobol' } }, 10_000),
      (e: unknown) => e instanceof RemoteError && e.code === 'invalid_message' && /language/.test(e.message),
    )
    await assert.rejects(
      sandbox.ask(
        SandboxRunCode.make({ code: 'print(1)', language: 'python', files: { '/etc/x': '' } }),
        10_000,
      ),
      (e: unknown) =>
        e instanceof RemoteError && e.code === 'invalid_message' && /must be relative/.test(e.message),
    )
    const ok = await sandbox.ask(SandboxRunCode.make({ code: 'echo ok', language: 'bash' }), 30_000)
    assert.equal((ok.payload as RunCodeResponse).run_result?.stdout, 'ok\n')
  })
})
