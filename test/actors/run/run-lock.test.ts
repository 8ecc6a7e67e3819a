import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { lockRunDir, RunLockedError } from '../../../actors/index.ts'
import { LEARNER_LOCK_FILE, lockHolderState, RUN_LOCK_FILE } from '../../../actors/testing.ts'

const tmp = () => mkdtempSync(join(tmpdir(), 'triad-lock-'))
const runLockModule = fileURLToPath(new URL('../../../actors/run/run-lock.ts', import.meta.url))

/** Writes a lock file as another process would have written it. */
function writeLock(dir: string, holder: Record<string, unknown>): string {
  const text = `${JSON.stringify(holder)}\n`
  writeFileSync(join(dir, RUN_LOCK_FILE), text)
  return text
}

/** The pid of a process that has exited (a real child, started and reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise((r) => child.once('exit', r))
  return child.pid!
}

describe('actors/run/run-lock', () => {
  it('lockRunDir - run.lock holds pid, host and time; a second lock is refused naming the dir and the pid; release removes it', async () => {
    const dir = tmp()
    const lock = await lockRunDir(dir, { clock: { now: () => 1_000, setTimeout, clearTimeout } })
    const held = JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8'))
    assert.equal(held.pid, process.pid)
    assert.equal(held.hostname, hostname())
    assert.equal(held.started, 1_000)
    assert.equal(typeof held.procStart, 'number')
    assert.deepEqual(lock.holder, held)
    assert.equal(lockHolderState(lock.holder), 'alive')
    await assert.rejects(
      lockRunDir(dir),
      (err: Error) =>
        err instanceof RunLockedError &&
        err.message ===
          `${dir} is in use by another triad run (pid ${process.pid}, since 1970-01-01T00:00:01.000Z); stop it or wait for it to end before running in this directory again`,
    )
    assert.deepEqual(readdirSync(dir), [RUN_LOCK_FILE], 'the refused attempt wrote nothing')
    await lock.release()
    await lock.release()
    assert.deepEqual(readdirSync(dir), [])
  })

  it('lockRunDir - the lock of a live process is refused and left as it is', async () => {
    const dir = tmp()
    const holder = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    try {
      const text = writeLock(dir, { pid: holder.pid, hostname: hostname(), started: 0 })
      await assert.rejects(
        lockRunDir(dir),
        (err: Error) =>
          err instanceof RunLockedError &&
          err.message.startsWith(`${dir} is in use by another triad run (pid ${holder.pid},`),
      )
      assert.equal(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8'), text)
      assert.deepEqual(readdirSync(dir), [RUN_LOCK_FILE])
    } finally {
      holder.kill('SIGKILL')
    }
  })

  it("lockRunDir - a run is refused while the learner of an earlier run (learner.lock) still runs, naming its pid; a dead learner's lock is taken over by the next learner", async () => {
    const dir = tmp()
    const learner = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    try {
      const text = `${JSON.stringify({ pid: learner.pid, hostname: hostname(), started: 0 })}\n`
      writeFileSync(join(dir, LEARNER_LOCK_FILE), text)
      await assert.rejects(
        lockRunDir(dir),
        (err: Error) =>
          err instanceof RunLockedError &&
          err.message ===
            `${dir} is in use by the learner of an earlier triad run (pid ${learner.pid}, since 1970-01-01T00:00:00.000Z), which still runs; it stops by itself within seconds of its triad run's end: wait for it (or kill ${learner.pid}) before running in this directory again`,
      )
      assert.deepEqual(readdirSync(dir), [LEARNER_LOCK_FILE], 'nothing written')
      await assert.rejects(lockRunDir(dir, { file: LEARNER_LOCK_FILE }), RunLockedError)
    } finally {
      learner.kill('SIGKILL')
      await new Promise((r) => learner.once('exit', r))
    }
    // Dead now: the run may start, and its learner takes the stale learner.lock over.
    const run = await lockRunDir(dir)
    const lines: string[] = []
    const next = await lockRunDir(dir, { file: LEARNER_LOCK_FILE, log: (l) => lines.push(l) })
    assert.equal(JSON.parse(readFileSync(join(dir, LEARNER_LOCK_FILE), 'utf8')).pid, process.pid)
    assert.match(lines[0]!, new RegExp(`took over the stale lock of pid ${learner.pid} `))
    await next.release()
    await run.release()
    assert.deepEqual(readdirSync(dir), [])
  })

  it('lockRunDir - the lock of a dead process, or of a pid now used by a later process, is taken over with a line', async () => {
    for (const stale of [
      { pid: await deadPid(), hostname: hostname(), started: 0 },
      // This process's pid, but the holder started at another time: the pid was reused.
      { pid: process.pid, hostname: hostname(), started: 0, procStart: 1 },
    ]) {
      const dir = tmp()
      writeLock(dir, stale)
      const lines: string[] = []
      const lock = await lockRunDir(dir, { log: (l) => lines.push(l) })
      assert.deepEqual(lock.tookOver, stale)
      assert.deepEqual(lines, [
        `${join(dir, RUN_LOCK_FILE)}: took over the stale lock of pid ${stale.pid} (started 1970-01-01T00:00:00.000Z), which no longer runs`,
      ])
      assert.equal(JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).pid, process.pid)
      assert.deepEqual(readdirSync(dir), [RUN_LOCK_FILE])
      await lock.release()
    }
  })

  it('lockRunDir - a lock from another host, or a file that is no lock, is refused and never taken over', async () => {
    const dir = tmp()
    writeLock(dir, { pid: 1, hostname: `not-${hostname()}`, started: 0 })
    await assert.rejects(
      lockRunDir(dir),
      (err: Error) =>
        err instanceof RunLockedError &&
        err.elsewhere &&
        err.message ===
          `${dir} is in use by triad run pid 1 on host not-${hostname()} since 1970-01-01T00:00:00.000Z; this host cannot check that process: if that run is gone, delete ${join(dir, RUN_LOCK_FILE)}`,
    )
    writeFileSync(join(dir, RUN_LOCK_FILE), 'garbage')
    await assert.rejects(
      lockRunDir(dir),
      (err: Error) =>
        err instanceof RunLockedError &&
        err.message ===
          `${dir} is locked by ${join(dir, RUN_LOCK_FILE)}, which is not a triad run lock; delete it if no triad run uses ${dir}`,
    )
    assert.equal(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8'), 'garbage')
  })

  it('lockRunDir - processes racing for a stale lock: exactly one takes it; it goes when its holder exits', async () => {
    const dir = tmp()
    writeLock(dir, { pid: await deadPid(), hostname: hostname(), started: 0 })
    // Each child says it is ready, tries once when it reads "go" (all at once), prints the outcome,
    // then holds on until its stdin closes and exits without releasing (the exit hook removes the lock).
    const script = `
      import { createInterface } from 'node:readline'
      import { lockRunDir } from ${JSON.stringify(runLockModule)}
      const lines = createInterface({ input: process.stdin })
      lines.once('line', async () => {
        try { await lockRunDir(${JSON.stringify(dir)}); console.log(JSON.stringify({ got: true })) }
        catch (err) { console.log(JSON.stringify({ got: false, name: err.name })) }
      })
      lines.once('close', () => process.exit(0))
      console.log(JSON.stringify({ ready: true }))`
    const children = Array.from({ length: 3 }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let err = ''
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString()
      })
      const lines: Record<string, unknown>[] = []
      const waiters: (() => void)[] = []
      createInterface({ input: child.stdout! }).on('line', (l) => {
        lines.push(JSON.parse(l))
        for (const w of waiters.splice(0)) w()
      })
      /** Resolves with the n-th line (1-based); rejects when the child exits first or after 60 s. */
      const line = (n: number) =>
        new Promise<Record<string, unknown>>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no line ${n} within 60 s: ${err}`)), 60_000)
          const onExit = () => reject(new Error(`child exited before line ${n}: ${err}`))
          child.once('exit', onExit)
          const check = () => {
            if (lines.length >= n) {
              clearTimeout(timer)
              child.off('exit', onExit)
              resolve(lines[n - 1]!)
            } else waiters.push(check)
          }
          check()
        })
      return { child, line }
    })
    try {
      await Promise.all(children.map((c) => c.line(1)))
      for (const c of children) c.child.stdin!.write('go\n')
      const outcomes = (await Promise.all(children.map((c) => c.line(2)))) as {
        got: boolean
        name?: string
      }[]
      assert.equal(outcomes.filter((o) => o.got).length, 1, JSON.stringify(outcomes))
      assert.deepEqual(
        outcomes.filter((o) => !o.got).map((o) => o.name),
        ['RunLockedError', 'RunLockedError'],
      )
      const winner = children[outcomes.findIndex((o) => o.got)]!.child
      assert.equal(JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).pid, winner.pid)
      const exited = children.map((c) => new Promise((r) => c.child.once('exit', r)))
      for (const c of children) c.child.stdin!.end()
      await Promise.all(exited)
      assert.deepEqual(readdirSync(dir), [], 'the lock went with its holder; no temporary file is left')
    } finally {
      for (const c of children) c.child.kill('SIGKILL')
    }
  })
})
