import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  InProcessTransport,
  type NodeConfig,
  RoleFailedError,
  startInProcessNodes,
} from '../../../actors/index.ts'
import { waitUntil } from '../../support/process-tree.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

/**
 * A node config of a tiny run (no SFT) in `runDir`. `backend` is set on the config: the test of a
 * role that cannot start names a backend no recipe can (`model.backend` is checked).
 */
const config = (runDir: string, backend?: string): NodeConfig => ({
  ...tinyNodeConfig('solo', runDir),
  ...(backend ? { backend } : {}),
})

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

  it('in-process-nodes - a learner that cannot resume fails the run with RoleFailedError naming the file; stop returns though the rollout waits for weights that never come', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'triad-solo-'))
    const checkpoints = join(runDir, 'checkpoints')
    mkdirSync(join(checkpoints, 'step-1'), { recursive: true })
    writeFileSync(
      join(checkpoints, 'latest.json'),
      JSON.stringify({ version: 1, usedSeqs: [], dir: 'step-1' }),
    )
    const transport = new InProcessTransport()
    const nodes = startInProcessNodes(transport, config(runDir), { logsDir: runDir })
    const config1 = join(checkpoints, 'step-1', 'config.json')
    await assert.rejects(nodes.finished, (err: unknown) => {
      assert.ok(err instanceof RoleFailedError)
      assert.equal(err.role, 'learner')
      assert.equal(
        err.message,
        `the learner role failed: no step checkpoint in ${checkpoints} can be read, so the run cannot resume: step-1: ${config1}: cannot read; see ${join(runDir, 'learner.log')}`,
      )
      return true
    })
    // The rollout waits for the first weights, which this learner never publishes.
    const rolloutLog = join(runDir, 'rollout.log')
    await waitUntil(
      () =>
        existsSync(rolloutLog) &&
        readFileSync(rolloutLog, 'utf8').includes('waiting for the learner to publish the first weights'),
      30_000,
      () => readFileSync(rolloutLog, 'utf8'),
    )
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      nodes.stop(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('stop did not return within 20 s')), 20_000)
      }),
    ]).finally(() => clearTimeout(timer))
    await transport.close()
  })
})
