import assert from 'node:assert/strict'
import { appendFileSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { appendRunLog, readRunTransport, recordRunTransport, runDirPaths } from '../../../actors/index.ts'

describe('actors/run/run-transport', () => {
  it('run-transport - the latest transport event of logs/run.jsonl wins (a resume records its own)', async () => {
    const dir = runDirPaths(mkdtempSync(join(tmpdir(), 'triad-rt-')))
    await appendRunLog(dir, 'run', { event: 'start', time: 1 })
    await recordRunTransport(dir, { transport: 'nats', url: 'nats://127.0.0.1:4222', monitor: 'http://x' }, 2)
    assert.deepEqual(await readRunTransport(dir.path), {
      transport: 'nats',
      url: 'nats://127.0.0.1:4222',
      monitor: 'http://x',
    })
    await appendRunLog(dir, 'run', { event: 'resume', time: 3 })
    await recordRunTransport(dir, { transport: 'in-process', reason: 'nats-server not found on PATH' }, 4)
    assert.deepEqual(await readRunTransport(dir.path), {
      transport: 'in-process',
      reason: 'nats-server not found on PATH',
    })
  })

  it('run-transport - no directory, no log, no event, or a broken line: undefined or skipped', async () => {
    assert.equal(await readRunTransport(join(tmpdir(), 'triad-no-such-run-dir')), undefined)
    const dir = runDirPaths(mkdtempSync(join(tmpdir(), 'triad-rt-')))
    assert.equal(await readRunTransport(dir.path), undefined)
    await appendRunLog(dir, 'run', { event: 'start', time: 1 })
    assert.equal(await readRunTransport(dir.path), undefined)
    await recordRunTransport(dir, { transport: 'in-process' }, 2)
    mkdirSync(dir.logsDir, { recursive: true })
    appendFileSync(join(dir.logsDir, 'run.jsonl'), '{"event":"transport", broken\n')
    assert.deepEqual(await readRunTransport(dir.path), { transport: 'in-process' })
  })
})
