import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type CommandRunResult,
  encodeEnvelope,
  MessageRegistry,
  RunCodeRequestSchema,
  SandboxRunCode,
  statusOf,
  ValidationError,
} from '../../protocols/index.ts'
import { sandboxMessages } from '../../protocols/testing.ts'

const done = (return_code: number): CommandRunResult => ({
  status: 'Finished',
  execution_time: 0.1,
  return_code,
  stdout: '',
  stderr: '',
})

describe('protocols/sandbox-api', () => {
  it('status rule - Error anywhere gives SandboxError, a time limit or non-zero exit Failed, else Success', () => {
    assert.equal(statusOf([null, done(0)]), 'Success')
    assert.equal(statusOf([done(0), done(0)]), 'Success')
    assert.equal(statusOf([null, done(2)]), 'Failed')
    assert.equal(statusOf([done(1), null]), 'Failed')
    assert.equal(statusOf([null, done(-9)]), 'Failed')
    assert.equal(statusOf([null, { ...done(0), status: 'TimeLimitExceeded', return_code: null }]), 'Failed')
    assert.equal(
      statusOf([
        { ...done(0), status: 'Error' },
        { ...done(0), status: 'TimeLimitExceeded' },
      ]),
      'SandboxError',
    )
  })

  it('request - SandboxFusion defaults are applied', () => {
    const r = RunCodeRequestSchema.parse({ code: 'print(1)', language: 'python' })
    assert.deepEqual(r, {
      code: 'print(1)',
      language: 'python',
      compile_timeout: 10,
      run_timeout: 10,
      memory_limit_MB: -1,
      files: {},
      fetch_files: [],
    })
  })

  it('sandbox.run_code - travels in an envelope; a bad language is a ValidationError', () => {
    const registry = new MessageRegistry([...sandboxMessages])
    const env = registry.parse(encodeEnvelope(SandboxRunCode.make({ code: 'echo 1', language: 'bash' })))
    assert.equal(env.type, 'sandbox.run_code')
    assert.equal((env.payload as { run_timeout: number }).run_timeout, 10)
    assert.throws(
      () => registry.validate(SandboxRunCode.make({ code: '', language: 'cobol' as 'bash' })),
      (e: unknown) => e instanceof ValidationError && e.issues[0]!.path === 'language',
    )
  })
})
