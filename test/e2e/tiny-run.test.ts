import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readAckRecords, readLatestCheckpoint } from '../../actors/index.ts'
import { startTriad } from '../support/triad-process.ts'

/**
 * End to end: `triad run recipes/tiny.ts` as a user runs it (embedded nats-server, learner and
 * rollout processes, SFT, RL steps, final evaluation). It checks that every part took part and
 * wrote what it should; it does not check learning.
 */
describe('e2e - triad run recipes/tiny.ts', () => {
  it('e2e - every role takes part, the step budget is reached, metrics and evaluation are written', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-'))
    const run = startTriad(['run', 'recipes/tiny.ts', '--runs-dir', runsDir])
    const created = await run.waitForLine((j) => j.event === 'run.created', 60_000)
    const { code } = await run.exited
    assert.equal(code, 0, run.stderr())
    const dir = String(created.dir)
    assert.ok(
      run.stdout.some((l) => /stopping \(3 steps done\)/.test(l)),
      run.stdout.join('\n'),
    )

    const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { role: string; id: string; step: number; values: Record<string, number> })
    const roles = new Set(lines.map((l) => l.role))
    for (const role of ['learner', 'rollout']) assert.ok(roles.has(role), `no metrics from ${role}`)
    const learner = lines.filter((l) => l.role === 'learner' && l.values['learner/version'] !== undefined)
    assert.equal(Math.max(...learner.map((l) => l.values['learner/version']!)), 3)
    const rollout = lines.filter((l) => l.role === 'rollout').at(-1)
    assert.ok((rollout?.values['rollout/episodes'] ?? 0) > 0, 'episodes ran through the environments')
    // tiny.ts sends half the turns to the stale engine (rho 0.5): both kinds of engine served.
    assert.ok((rollout?.values['rollout/turns_fresh'] ?? 0) > 0, 'a fresh engine served turns')
    assert.ok((rollout?.values['rollout/turns_stale'] ?? 0) > 0, 'a stale engine served turns')
    assert.ok(
      lines.some((l) => l.values['sft/loss'] !== undefined),
      'the cold-start SFT reported its loss',
    )

    // Checkpoints, the ack audit trail, the evaluation table and the run log.
    const checkpoints = join(dir, 'checkpoints')
    assert.ok(existsSync(join(checkpoints, 'sft', 'model.safetensors')))
    assert.ok(existsSync(join(checkpoints, 'latest.json')))
    assert.ok(readAckRecords(checkpoints).some((r) => r.used.length > 0))
    const evals = readdirSync(join(dir, 'eval')).filter((f) => f.endsWith('.json'))
    assert.equal(evals.length, 1)
    const table = JSON.parse(readFileSync(join(dir, 'eval', evals[0]!), 'utf8')) as {
      rows: { checkpoint: string }[]
    }
    // The budget (3 steps) is off the checkpoint interval (2): the last step is checkpointed at the
    // end, and that is the one evaluated.
    assert.equal(readLatestCheckpoint(checkpoints)?.version, 3)
    assert.deepEqual([...new Set(table.rows.map((r) => r.checkpoint))].sort(), ['sft', 'step-3'])
    assert.ok(existsSync(join(dir, 'logs', 'learner.log')) && existsSync(join(dir, 'logs', 'rollout.log')))
  })
})
