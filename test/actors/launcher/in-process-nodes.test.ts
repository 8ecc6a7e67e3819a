import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  InProcessTransport,
  type NodeConfig,
  RoleFailedError,
  startInProcessNodes,
} from '../../../actors/index.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

/** A node config of a tiny run (no SFT) in `runDir`. */
const config = (runDir: string, backend?: string): NodeConfig =>
  tinyNodeConfig('solo', runDir, backend ? { backend } : {})

describe('actors/launcher/in-process-nodes', () => {
  it('in-process-nodes - learner and rollout in one process reach the step budget; each role logs to its file', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'triad-solo-'))
    const transport = new InProcessTransport()
    const nodes = startInProcessNodes(transport, config(runDir), { logsDir: runDir })
    await nodes.finished
    await nodes.stop()
    await transport.close()
    assert.ok(existsSync(join(runDir, 'checkpoints', 'step-2', 'model.safetensors')))
    assert.match(readFileSync(join(runDir, 'learner.log'), 'utf8'), /tokenizer: \d+ tokens/)
    assert.match(readFileSync(join(runDir, 'rollout.log'), 'utf8'), /tensor backend/)
  })

  it('in-process-nodes - a role that cannot start fails the run with RoleFailedError naming it; stop still returns', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'triad-solo-'))
    const transport = new InProcessTransport()
    const nodes = startInProcessNodes(transport, config(runDir, 'abacus'), { logsDir: runDir })
    await assert.rejects(
      nodes.finished,
      (err: unknown) =>
        err instanceof RoleFailedError &&
        err.role === 'learner' &&
        /^the learner role failed: .*abacus/.test(err.message) &&
        err.cause instanceof Error,
    )
    await nodes.stop()
    await transport.close()
  })
})
