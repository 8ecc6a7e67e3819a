import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  type NatsServer,
  type NodeConfig,
  startLearnerNode,
  startNatsServer,
} from '../../../actors/index.ts'
import { MessageRegistry, MetricsReport, type PayloadOf } from '../../../protocols/index.ts'

type Report = PayloadOf<typeof MetricsReport>

/** A learner of a tiny model with a short cold-start SFT (2 expert episodes per task). */
function sftConfig(run: string, runDir: string): NodeConfig {
  return {
    run,
    runDir,
    seed: 5,
    tokenizerMerges: 0,
    model: { layers: 1, width: 16, heads: 2, contextLength: 768 },
    tasks: [
      { name: 'calc', weight: 1, difficulty: 1 },
      { name: 'maze', weight: 1, difficulty: 1 },
    ],
    sft: {
      enabled: true,
      episodesPerTask: 2,
      errorRate: 0,
      successRate: 1,
      epochs: 2,
      lr: 1e-3,
      batchTokens: 1536,
    },
    rl: { groupSize: 2, lr: 1e-3, step: {} },
    pipeline: {
      mode: 'async',
      freshEngines: 1,
      staleEngines: 0,
      rho: 0,
      staleEvery: 1,
      stalenessBound: 8,
      minGroups: 1,
      maxGroups: 2,
      bufferGroups: 2,
      concurrency: 2,
      maxTurns: 2,
      maxNewTokens: 8,
      temperature: 1,
      topP: 1,
      checkpointEvery: 1,
    },
    maxSteps: 2,
  }
}

/** Resolves when `check` holds, polled every 50 ms; rejects after `ms` with `what`. */
async function waitFor(check: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('actors/node/learner-node', () => {
  let nats: NatsServer
  const storeDir = mkdtempSync(join(tmpdir(), 'triad-learner-js-'))
  before(async () => {
    nats = await startNatsServer({ monitorPort: false, storeDir })
  })
  after(async () => {
    await nats.stop()
    rmSync(storeDir, { recursive: true, force: true })
  })

  it('learner-node - the cold-start SFT reports every step with its total: sft/step 1..N, sft/steps_total N', async () => {
    const run = `sft${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-learner-sft-'))
    const watch = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const reports: Report[] = []
    const sub = watch.subscribe(`triad.${run}.metrics.>`, {
      accepts: new MessageRegistry([MetricsReport]),
      handler: (m) => reports.push(m.payload as Report),
    })
    const lt = await connectNats({ servers: nats.url, run, role: 'learner', id: '0' })
    const learner = await startLearnerNode(lt, sftConfig(run, runDir), '0')
    try {
      // The node is started once SFT is done and version 0 is published: every SFT report is out.
      const sft = () => reports.filter((r) => r.values['sft/step'] !== undefined)
      await waitFor(
        () => sft().some((r) => r.values['sft/step'] === r.values['sft/steps_total']),
        10_000,
        () => JSON.stringify(sft().map((r) => r.values)),
      )
      const totals = new Set(sft().map((r) => r.values['sft/steps_total']))
      assert.equal(totals.size, 1, `one total: ${[...totals]}`)
      const total = [...totals][0]!
      assert.ok(total >= 2, `two epochs take at least two steps: ${total}`)
      assert.deepEqual(
        sft().map((r) => r.values['sft/step']),
        Array.from({ length: total }, (_, i) => i + 1),
      )
      assert.ok(sft().every((r) => r.step === 0 && r.role === 'learner'))
    } finally {
      await learner.stop()
      await sub.stop()
      await lt.close()
      await watch.close()
      rmSync(runDir, { recursive: true, force: true })
    }
  })
})
