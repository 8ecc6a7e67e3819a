import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { RUN_STARTED, startTriad, type TriadProcess } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

/**
 * A run whose time budget ends with periodic evaluations still queued (one at every step, each
 * slower than a step) drains them at its stop; a SIGINT during that drain ends the run at once with
 * exit 130, leaving the pending ones in eval/.step-N-checkpoint/ for the resume and writing no final
 * evaluation.
 */
describe('e2e - a signal while the stop drains the periodic evaluations', () => {
  const tmpDir = mkdtempSync(join(tmpdir(), 'triad-drain-'))
  const started: TriadProcess[] = []
  after(async () => {
    for (const run of started) await run.kill('SIGKILL')
  })

  it('SIGINT during the drain: exit 130, the pending evaluations left for the resume, no final evaluation', async () => {
    const recipe = join(tmpDir, 'drain-tiny.ts')
    const source = readFileSync(tiny, 'utf8')
      .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
      .replace("name: 'tiny'", "name: 'drain-tiny'")
      .replace(/evaluation: \{[^}]*\}/, 'evaluation: { every: 1, k: 8, instancesPerTask: 16 }')
      .replace(/budget: \{[^}]*\}/, 'budget: { maxSteps: 100000, maxMinutes: 0.5 }')
    assert.match(source, /every: 1, k: 8/)
    assert.match(source, /maxMinutes: 0.5/)
    writeFileSync(recipe, source)
    const run = startTriad(['run', recipe, '--runs-dir', join(tmpDir, 'runs')], {
      PATH: pathWithNatsServer(),
    })
    started.push(run)
    const dir = (await run.waitForText(RUN_STARTED, 60_000))[2]!
    await run.waitForText(/^stopping \(time budget\)$/m, 180_000)
    const pending = () => readdirSync(join(dir, 'eval')).filter((f) => /^\.step-\d+-checkpoint$/.test(f))
    assert.ok(pending().length >= 2, `queued evaluations at the stop: ${pending().join(', ')}`)
    run.child.kill('SIGINT')
    await run.waitForText(/^interrupted: the pending periodic evaluations are left for the resume$/m, 10_000)
    const exit = await run.exited
    assert.equal(exit.code, 130, run.stderr())
    assert.ok(pending().length >= 1, 'the pending evaluations are still there for the resume')
    assert.deepEqual(
      readdirSync(join(dir, 'eval')).filter((f) => f.startsWith('final-')),
      [],
    )
  })
})
