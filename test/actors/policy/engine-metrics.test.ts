import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type Clock, InProcessTransport, startActorSystem, startPolicyEngine } from '../../../actors/index.ts'

/**
 * The engine's metrics timer and a transport closed under it (a process shutting down closes its
 * connection while an engine still runs): the next report ends the reports instead of throwing
 * from the timer, where nothing could catch it and the process would die of it.
 */
describe('actors/policy/engine - metrics on a closed transport', () => {
  it('policy engine - a report due after the transport closed is skipped and no further one is scheduled', async () => {
    const transport = new InProcessTransport()
    const system = startActorSystem({ name: 'engine-metrics' })
    const due: (() => void)[] = []
    const clock: Clock = {
      now: () => 0,
      setTimeout: (fn) => {
        due.push(fn)
        return due.length
      },
      clearTimeout: () => {},
    }
    const engine = await startPolicyEngine(system, transport, {
      run: 'm',
      id: 'e',
      modelConfig: { layers: 1, width: 16, heads: 2, contextLength: 16, vocabSize: 13 },
      metricsIntervalMs: 1_000,
      loadLatest: false,
      clock,
    })
    // One report while the transport is open schedules the next.
    assert.equal(due.length, 1)
    due.shift()!()
    assert.equal(due.length, 1)
    await transport.close()
    assert.doesNotThrow(() => due.shift()!())
    assert.equal(due.length, 0, 'no report is scheduled after the transport closed')
    await engine.stop().catch(() => undefined) // its services cannot unsubscribe from a closed transport
    await system.stop()
  })
})
