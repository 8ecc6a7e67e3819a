import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startTriad } from '../support/triad-process.ts'

// Real `triad` processes: a backend or thread setting that cannot work is one line and a non-zero
// exit, never a stack trace, whichever command meets it.
describe('bin/triad - backend and thread settings that cannot work', () => {
  it('TRIAD_THREADS above the cores: one line naming the setting, exit 2', async () => {
    const child = startTriad(['bench', 'rl-step', '--quick'], { TRIAD_THREADS: '999' })
    assert.equal((await child.exited).code, 2)
    assert.match(
      child.stderr(),
      /^triad: TRIAD_THREADS="999": more than the \d+ cores? of this machine; give 1 to \d+/,
    )
    assert.equal(child.stderr().trim().split('\n').length, 1)
    assert.deepEqual(child.stdout, [])
  })

  it('TRIAD_BACKEND unknown: one line listing the known backends, exit 2', async () => {
    // A model directory (its config.json is not read before the backend is chosen).
    const model = mkdtempSync(join(tmpdir(), 'triad-backend-'))
    writeFileSync(join(model, 'config.json'), '{}')
    const child = startTriad(['generate', model, '--prompt', 'hi'], { TRIAD_BACKEND: 'bogus' })
    assert.equal((await child.exited).code, 2)
    assert.equal(
      child.stderr(),
      "triad: unknown backend 'bogus'; known: native, tfjs-node-gpu, tfjs-node, wasm, cpu, cuda\n",
    )
  })
})
