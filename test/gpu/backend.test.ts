import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { BackendUnavailableError, chooseBackend, UnknownBackendError } from '../../gpu/index.ts'

describe('gpu/backend', () => {
  it('backend - unforced choice takes the native engine that npm ci built', async () => {
    const lines: string[] = []
    const choice = await chooseBackend({ env: {}, log: (l) => lines.push(l), cudaVisible: () => false })
    assert.equal(choice.name, 'native')
    assert.equal(choice.forced, false)
    assert.deepEqual(choice.skipped, {})
    assert.equal(tf.getBackend(), 'native')
    assert.equal(lines.length, 1)
    assert.match(lines[0]!, /tensor backend native/)
  })

  it('backend - TRIAD_BACKEND forces a backend', async () => {
    const choice = await chooseBackend({ env: { TRIAD_BACKEND: 'cpu' }, log: () => {} })
    assert.deepEqual(choice, { name: 'cpu', tfBackend: 'cpu', forced: true, skipped: {} })
    assert.equal(tf.getBackend(), 'cpu')
  })

  it('backend - the setting wins over the environment variable', async () => {
    const choice = await chooseBackend({ backend: 'wasm', env: { TRIAD_BACKEND: 'cpu' }, log: () => {} })
    assert.equal(choice.name, 'wasm')
    assert.equal(tf.getBackend(), 'wasm')
  })

  it('backend - an unknown name lists the valid ones', async () => {
    await assert.rejects(chooseBackend({ backend: 'tpu', log: () => {} }), (err: unknown) => {
      assert.ok(err instanceof UnknownBackendError)
      assert.match(err.message, /unknown backend 'tpu'; known: native, tfjs-node-gpu, tfjs-node, wasm, cpu/)
      return true
    })
  })

  it('backend - a forced backend that is missing fails loudly', async () => {
    await assert.rejects(chooseBackend({ backend: 'tfjs-node', log: () => {} }), (err: unknown) => {
      assert.ok(err instanceof BackendUnavailableError)
      assert.equal(err.backend, 'tfjs-node')
      assert.match(err.message, /backend 'tfjs-node' is unavailable/)
      return true
    })
  })
})
