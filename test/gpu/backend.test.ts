import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { BackendUnavailableError, chooseBackend, UnknownBackendError } from '../../gpu/index.ts'

describe('gpu/backend', () => {
  it('backend - unforced choice falls through missing native packages to wasm', async () => {
    const lines: string[] = []
    const choice = await chooseBackend({ env: {}, log: (l) => lines.push(l), cudaVisible: () => false })
    // The native packages are optional and absent on the build machine.
    assert.equal(choice.name, 'wasm')
    assert.equal(choice.forced, false)
    assert.ok('tfjs-node-gpu' in choice.skipped && 'tfjs-node' in choice.skipped)
    assert.equal(tf.getBackend(), 'wasm')
    assert.equal(lines.length, 1)
    assert.match(lines[0]!, /tensor backend wasm/)
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
    await assert.rejects(chooseBackend({ backend: 'cuda', log: () => {} }), (err: unknown) => {
      assert.ok(err instanceof UnknownBackendError)
      assert.match(err.message, /unknown backend 'cuda'; known: tfjs-node-gpu, tfjs-node, wasm, cpu/)
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
