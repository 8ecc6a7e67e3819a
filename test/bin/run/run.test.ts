import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir, NatsConnectError } from '../../../actors/index.ts'
import { freePort } from '../../../actors/testing.ts'
import { startRun } from '../../../bin/run/index.ts'
import { defineRecipe, resolveTasks } from '../../../recipes/index.ts'

describe('recipes/run', () => {
  it('startRun - a NATS URL that does not answer is a clear error and writes nothing into the run', async () => {
    const recipe = resolveTasks(defineRecipe({ name: 'nonats', tasks: [{ name: 'calc' }] }))
    const dir = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-run-')),
      name: 'nonats',
      recipe,
    })
    const before = readdirSync(dir.path).sort()
    const port = await freePort()
    await assert.rejects(
      startRun(recipe, dir, { resume: false, nats: `nats://127.0.0.1:${port}`, log: () => {} }),
      (e: unknown) => e instanceof NatsConnectError && e.message.includes(`127.0.0.1:${port}`),
    )
    assert.deepEqual(readdirSync(dir.path).sort(), before)
    assert.equal(existsSync(join(dir.path, 'node-config.json')), false)
  })
})
