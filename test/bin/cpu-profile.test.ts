import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startCpuProfile } from '../../bin/cpu-profile.ts'

/** Burns CPU in a function the profile can name. */
function spinForProfile(ms: number): number {
  const end = performance.now() + ms
  let x = 0
  while (performance.now() < end) x += Math.sqrt(x + 1)
  return x
}

describe('bin/cpu-profile', () => {
  it('cpu-profile - records this process and writes a V8 profile whose samples name the busy function', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-prof-'))
    try {
      const profile = await startCpuProfile(join(dir, 'sub'), 'test', 500)
      spinForProfile(200)
      const file = await profile.stop()
      assert.equal(file, join(dir, 'sub', 'test.cpuprofile'))
      const p = JSON.parse(readFileSync(file, 'utf8')) as {
        nodes: { id: number; callFrame: { functionName: string } }[]
        samples: number[]
      }
      const spin = p.nodes.find((n) => n.callFrame.functionName === 'spinForProfile')
      assert.ok(spin, 'the busy function is in the profile')
      assert.ok(p.samples.filter((id) => id === spin.id).length > 10, 'and has samples of its own')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
