import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { readLatestCheckpoint, readRunTransport } from '../../actors/index.ts'
import { learnerStep } from '../support/learner-step.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { waitUntil } from '../support/process-tree.ts'
import { RUN_STARTED, startTriad } from '../support/triad-process.ts'

const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))

/** recipes/tiny.ts with a budget that outlasts the test (it is stopped by a signal). */
function longTinyRecipe(dir: string): string {
  const file = join(dir, 'long-tiny.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'long-tiny'")
    .replace(/budget: \{[^}]*\}/, 'budget: { maxSteps: 100000, maxMinutes: 10 }')
  assert.match(source, /maxSteps: 100000/)
  writeFileSync(file, source)
  return file
}

describe('bin/run - one process', () => {
  it('triad run - --nats and --in-process together are refused before anything is made', async () => {
    const runs = join(mkdtempSync(join(tmpdir(), 'triad-run-')), 'runs')
    const child = startTriad([
      'run',
      tiny,
      '--runs-dir',
      runs,
      '--nats',
      'nats://127.0.0.1:4222',
      '--in-process',
    ])
    assert.equal((await child.exited).code, 2)
    assert.match(child.stderr(), /^triad: --nats and --in-process exclude each other/)
    assert.equal(existsSync(runs), false)
  })

  it('triad run --in-process - runs in one process even with nats-server on PATH, says so, and stops cleanly on SIGTERM (exit 143) with its last step checkpointed and its lock released', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'triad-run-'))
    const run = startTriad(['run', longTinyRecipe(tmp), '--runs-dir', join(tmp, 'runs'), '--in-process'], {
      PATH: pathWithNatsServer(),
    })
    try {
      const created = await run.waitForText(RUN_STARTED, 60_000)
      const dir = created[2]!
      // The first line is for people: the run id and its directory, no JSON.
      assert.equal(created[1], basename(dir))
      assert.equal(run.stdout[0], `run ${basename(dir)} started in ${join(tmp, 'runs', basename(dir))}`)
      await waitUntil(
        () => learnerStep(dir) >= 1,
        120_000,
        () => `no learner step; stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`,
      )
      run.child.kill('SIGTERM')
      const { code } = await run.exited
      assert.equal(code, 143, run.stderr())
      const out = run.stdout.join('\n')
      assert.match(
        out,
        /^--in-process: running learner and rollout in one process on the in-process transport \(triad monitor cannot attach\)$/m,
      )
      assert.doesNotMatch(out, /embedded nats-server/)
      assert.doesNotMatch(out, /^\{/m, 'no JSON line on stdout')
      assert.match(out, /stopping \(interrupted\)/)
      assert.equal((await readRunTransport(dir))?.transport, 'in-process')
      const stop = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string; reason?: string })
        .find((e) => e.event === 'stop')
      assert.equal(stop?.reason, 'signal')
      // The learner's stop checkpoints the steps it took since its last checkpoint.
      assert.ok((readLatestCheckpoint(join(dir, 'checkpoints'))?.version ?? 0) >= learnerStep(dir))
      assert.equal(existsSync(join(dir, 'run.lock')), false, 'SIGTERM released the lock')
    } finally {
      await run.kill('SIGKILL')
    }
  })
})
