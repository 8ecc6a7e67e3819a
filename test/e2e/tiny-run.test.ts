import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readRunTransport } from '../../actors/index.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { checkTinyRun } from '../support/tiny-run-checks.ts'
import { startTriad } from '../support/triad-process.ts'

/**
 * End to end: `triad run recipes/tiny.ts` as a user runs it (embedded nats-server, learner and
 * rollout processes, SFT, RL steps, final evaluation). It checks that every part took part and
 * wrote what it should; it does not check learning.
 */
describe('e2e - triad run recipes/tiny.ts', () => {
  it('e2e - every role takes part, the step budget is reached, metrics and evaluation are written', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-'))
    const run = startTriad(['run', 'recipes/tiny.ts', '--runs-dir', runsDir], { PATH: pathWithNatsServer() })
    const created = await run.waitForLine((j) => j.event === 'run.created', 60_000)
    const { code } = await run.exited
    assert.equal(code, 0, run.stderr())
    const dir = String(created.dir)
    checkTinyRun(dir, run.stdout)
    assert.ok(
      run.stdout.some((l) => /^embedded nats-server at nats:/.test(l)),
      run.stdout.join('\n'),
    )
    assert.equal((await readRunTransport(dir))?.transport, 'nats')
    // Both processes ended by themselves: the learner at its budget, the rollout on the SIGTERM
    // that followed (not SIGKILLed after its grace).
    const exits = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"process.exited"'))
      .map((l) => JSON.parse(l) as { name: string; code: number | null; signal: string | null; next: string })
      .map(({ name, code, signal, next }) => ({ name, code, signal, next }))
    assert.deepEqual(exits, [
      { name: 'learner', code: 0, signal: null, next: 'done' },
      { name: 'rollout', code: 0, signal: null, next: 'stop' },
    ])
  })
})
