import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildSandboxServer, DEFAULT_LIMITS, LocalBackend } from '../../sandboxes/index.ts'

const run = promisify(execFile)
let app: FastifyInstance
let backend: LocalBackend
let url = ''

before(async () => {
  backend = new LocalBackend({ limits: { ...DEFAULT_LIMITS, concurrency: 2 }, firstUid: 61600 })
  await backend.start()
  app = buildSandboxServer({ backend })
  url = await app.listen({ port: 0, host: '127.0.0.1' })
})

after(async () => {
  await app.close()
  await backend.close()
})

describe('sandboxes/compat', () => {
  it('compat - a stdlib-only Python SandboxFusion client gets the same fields and statuses', async () => {
    const script = new URL('./sandboxfusion_client.py', import.meta.url).pathname
    const { stdout } = await run('/usr/bin/python3', ['-I', script, url]).catch(
      (e: { stdout: string; stderr: string }) => {
        assert.fail(`client failed: ${e.stdout} ${e.stderr}`)
      },
    )
    const summary = JSON.parse(stdout) as { failures: string[]; statuses: Record<string, string> }
    assert.deepEqual(summary.failures, [])
    assert.deepEqual(summary.statuses, {
      hello: 'Success',
      stdin: 'Success',
      'exit 1': 'Failed',
      timeout: 'Failed',
      files: 'Success',
      'compile error': 'Failed',
      nodejs: 'Success',
    })
  })
})
