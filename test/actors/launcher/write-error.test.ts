import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import {
  asWriteError,
  childFailureLine,
  isWriteError,
  lockRunDir,
  RunWriteError,
} from '../../../actors/index.ts'
import { logStream } from '../../../actors/launcher/index.ts'
import { parseChildFailure, writeErrorCode } from '../../../actors/testing.ts'

/** An ENOSPC error as node:fs gives it. */
const enospc = (path?: string) =>
  Object.assign(new Error(`ENOSPC: no space left on device, ${path ? `open '${path}'` : 'write'}`), {
    code: 'ENOSPC',
    errno: -28,
    ...(path ? { path } : {}),
  })

describe('write errors', () => {
  it('writeErrorCode - the code of an error, of its cause, or of a message that crossed a process boundary; undefined for others', () => {
    assert.equal(writeErrorCode(enospc()), 'ENOSPC')
    assert.equal(
      writeErrorCode(new Error('outer', { cause: Object.assign(new Error('x'), { code: 'EDQUOT' }) })),
      'EDQUOT',
    )
    assert.equal(
      writeErrorCode({ message: 'learner: cannot write /r/x: no space left on device (ENOSPC)' }),
      'ENOSPC',
    )
    assert.equal(writeErrorCode(Object.assign(new Error('gone'), { code: 'ENOENT' })), undefined)
    assert.equal(writeErrorCode(new Error('timeout')), undefined)
    assert.equal(writeErrorCode(undefined), undefined)
    assert.equal(isWriteError(Object.assign(new Error('ro'), { code: 'EROFS' })), true)
  })

  it('RunWriteError - one line naming the writer, the path and what the code says; not restartable', () => {
    const err = new RunWriteError('learner', '/runs/r/checkpoints/step-2', enospc())
    assert.equal(
      err.message,
      'learner: cannot write /runs/r/checkpoints/step-2: no space left on device (ENOSPC)',
    )
    assert.equal(err.code, 'ENOSPC')
    assert.equal(err.restartable, false)
    assert.equal(
      new RunWriteError('run', '/r', Object.assign(new Error('q'), { code: 'EDQUOT' })).message,
      'run: cannot write /r: disk quota exceeded (EDQUOT)',
    )
  })

  it("asWriteError - the error's own path first, else the one given; other errors as they are", () => {
    const own = asWriteError(enospc('/r/eval/x.json'), 'eval', '/r/eval') as RunWriteError
    assert.equal(own.message, 'eval: cannot write /r/eval/x.json: no space left on device (ENOSPC)')
    const given = asWriteError(enospc(), 'run', '/r/metrics.jsonl') as RunWriteError
    assert.equal(given.path, '/r/metrics.jsonl')
    const other = new Error('boom')
    assert.equal(asWriteError(other, 'run', '/r'), other)
    assert.equal(asWriteError(own, 'x', '/y'), own)
  })

  it('childFailureLine - a write error says a restart cannot help', () => {
    assert.deepEqual(parseChildFailure(childFailureLine(enospc())), {
      event: 'failed',
      error: 'ENOSPC: no space left on device, write',
      restart: false,
    })
    assert.equal(parseChildFailure(childFailureLine(new Error('timeout')))?.restart, true)
  })
})

describe('write errors on a full file system (a tmpfs mounted here)', () => {
  const root = mkdtempSync(join(tmpdir(), 'triad-wfull-'))
  const mount = join(root, 'fs')
  mkdirSync(mount)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount])
  after(() => {
    execFileSync('umount', ['-l', mount])
    rmSync(root, { recursive: true, force: true })
  })
  const fill = () => {
    rmSync(join(mount, 'fill'), { force: true })
    const { bavail, bsize } = statfsSync(mount)
    try {
      writeFileSync(join(mount, 'fill'), Buffer.alloc(Number(bavail) * Number(bsize) + 65_536))
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC')
    }
  }

  it("logStream - a log file on a full disk: onError once, later lines dropped, no 'error' event unhandled", async () => {
    fill()
    const errors: Error[] = []
    let reported: () => void = () => {}
    const once = new Promise<void>((resolve) => {
      reported = resolve
    })
    const stream = logStream(join(mount, 'role.log'), (err) => {
      errors.push(err)
      reported()
    })
    for (let i = 0; i < 3; i++) stream.write(`${'x'.repeat(8192)}\n`)
    stream.end()
    await once
    await new Promise<void>((resolve) => (stream.closed ? resolve() : stream.once('close', () => resolve())))
    stream.write('after the error\n')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(errors.length, 1)
    assert.equal((errors[0] as NodeJS.ErrnoException).code, 'ENOSPC')
    rmSync(join(mount, 'fill'))
  })

  it('lockRunDir - a lock that cannot be written leaves no .run.lock.<pid>.* file behind', async () => {
    const dir = join(mount, 'run')
    mkdirSync(dir)
    fill()
    await assert.rejects(lockRunDir(dir), (err: NodeJS.ErrnoException) => err.code === 'ENOSPC')
    assert.deepEqual(readdirSync(dir), [])
    rmSync(join(mount, 'fill'))
  })
})
