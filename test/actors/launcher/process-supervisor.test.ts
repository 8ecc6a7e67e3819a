import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  childFailureLine,
  type ProcessEvent,
  ProcessSupervisor,
  processEventLine,
} from '../../../actors/index.ts'
import { NoReadableCheckpointError, parseChildFailure } from '../../../actors/testing.ts'

/** `node -e source` as a supervised child. */
const nodeChild = (name: string, source: string) => ({
  name,
  command: process.execPath,
  args: ['-e', source],
})
const ready = `console.log(JSON.stringify({ event: 'ready' }))`

/** A supervisor whose events are collected, with a wait for the first event that matches. */
function watched(maxRestarts: number) {
  const supervisor = new ProcessSupervisor({
    maxRestarts,
    withinMs: 60_000,
    backoff: { initialMs: 50, maxMs: 50, factor: 1 },
    onLimit: 'stop',
  })
  const events: ProcessEvent[] = []
  const waiters: { match: (e: ProcessEvent) => boolean; resolve: () => void }[] = []
  supervisor.on((e) => {
    events.push(e)
    for (const w of [...waiters])
      if (w.match(e)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
  })
  const until = (match: (e: ProcessEvent) => boolean, timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      if (events.some(match)) return resolve()
      const timer = setTimeout(
        () => reject(new Error(`no such event within ${timeoutMs} ms: ${JSON.stringify(events)}`)),
        timeoutMs,
      )
      waiters.push({
        match,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      })
    })
  const lines = () => events.map(processEventLine).filter((l): l is string => l !== undefined)
  return { supervisor, events, until, lines }
}

describe('actors/launcher/process-supervisor', () => {
  it('supervisor - a child that stops only on SIGKILL during stop is reported stopped, not restarting', async () => {
    const w = watched(5)
    const p = w.supervisor.start(
      nodeChild('stubborn', `process.on('SIGTERM', () => {}); ${ready}; setInterval(() => {}, 60_000)`),
    )
    await p.ready()
    const pid = p.pid()
    await w.supervisor.stop(300)
    const exited = w.events.filter((e) => e.type === 'exited')
    assert.equal(exited.length, 1)
    assert.deepEqual(exited[0], {
      type: 'exited',
      name: 'stubborn',
      pid,
      code: null,
      signal: 'SIGKILL',
      next: 'stop',
    })
    assert.deepEqual(w.lines(), [`stubborn (pid ${pid}) stopped (SIGKILL)`])
    assert.equal(
      w.events.filter((e) => e.type === 'started').length,
      1,
      'nothing was started again after stop',
    )
  })

  it('supervisor - a child that stops cleanly on SIGTERM is reported stopped', async () => {
    const w = watched(5)
    const p = w.supervisor.start(nodeChild('clean', `${ready}; setInterval(() => {}, 60_000)`))
    await p.ready()
    const pid = p.pid()
    await w.supervisor.stop(10_000)
    // Node's default SIGTERM action ends the process by the signal.
    assert.deepEqual(w.lines(), [`clean (pid ${pid}) stopped (SIGTERM)`])
  })

  it('supervisor - a crash says restarting with its backoff; past the limit it says it gives up', async () => {
    const w = watched(1)
    w.supervisor.start(nodeChild('crashy', 'process.exit(3)'))
    await w.until((e) => e.type === 'gave-up')
    const pids = w.events.flatMap((e) => (e.type === 'started' ? [e.pid] : []))
    assert.equal(pids.length, 2)
    assert.deepEqual(w.lines(), [
      `crashy (pid ${pids[0]}) exited (code 3); restarting in 50 ms`,
      `crashy (pid ${pids[1]}) exited (code 3)`,
      'crashy failed too often; giving up on it (last: exit code 3)',
    ])
    await w.supervisor.stop()
  })

  it('supervisor - a transient child that finishes cleanly is done: no line, no restart', async () => {
    const w = watched(5)
    const p = w.supervisor.start({ ...nodeChild('once', 'process.exit(0)'), restart: 'transient' })
    await p.finished
    assert.equal(w.events.find((e) => e.type === 'exited' && e.next === 'done') !== undefined, true)
    assert.deepEqual(w.lines(), [])
    await w.supervisor.stop()
  })

  it('supervisor - a child whose failure line says a restart cannot help is given up at once, with its error and log file', async () => {
    const w = watched(5)
    const logFile = join(mkdtempSync(join(tmpdir(), 'triad-sup-')), 'broken.log')
    const line = childFailureLine(
      new NoReadableCheckpointError('/r/checkpoints', [{ name: 'step-3', error: 'bad' }]),
    )
    w.supervisor.start({
      ...nodeChild('broken', `console.log(${JSON.stringify(line)}); process.exit(1)`),
      logFile,
    })
    await w.until((e) => e.type === 'gave-up')
    const pids = w.events.flatMap((e) => (e.type === 'started' ? [e.pid] : []))
    assert.equal(pids.length, 1, 'never restarted')
    const error = 'no step checkpoint in /r/checkpoints can be read, so the run cannot resume: step-3: bad'
    assert.deepEqual(w.events.at(-1), {
      type: 'gave-up',
      name: 'broken',
      restarts: 0,
      reason: 'not-restartable',
      error,
      logFile,
    })
    assert.deepEqual(w.lines(), [
      `broken (pid ${pids[0]}) exited (code 1)`,
      `broken failed and a restart cannot help; giving up on it (${error})`,
    ])
    await w.supervisor.stop()
    // The failure line is in the log too, as a pino line of level error with its fields.
    const logged = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const failed = logged.find((l) => l.event === 'failed')!
    assert.deepEqual(
      { ...failed, time: 0, pid: 0, hostname: '' },
      {
        ...JSON.parse(line),
        level: 50,
        time: 0,
        pid: 0,
        hostname: '',
        role: 'broken',
        stream: 'stdout',
        msg: 'failed',
      },
    )
  })

  it('supervisor - past the restart limit the gave-up event carries the last failure line of the child', async () => {
    const w = watched(1)
    const line = childFailureLine(new Error('disk full\n    at somewhere'))
    w.supervisor.start(nodeChild('flaky', `console.log(${JSON.stringify(line)}); process.exit(2)`))
    await w.until((e) => e.type === 'gave-up')
    assert.equal(w.events.filter((e) => e.type === 'started').length, 2)
    assert.deepEqual(w.events.at(-1), {
      type: 'gave-up',
      name: 'flaky',
      restarts: 1,
      reason: 'limit',
      error: 'disk full',
    })
    assert.equal(w.lines().at(-1), 'flaky failed too often; giving up on it (last: disk full)')
    await w.supervisor.stop()
  })

  it('childFailureLine - one JSON line: the first line of the message; restart false only for restartable: false', () => {
    assert.equal(
      childFailureLine(new Error('a\nb')),
      JSON.stringify({ event: 'failed', error: 'a', restart: true }),
    )
    const notRestartable = Object.assign(new Error('bad file'), { restartable: false })
    assert.deepEqual(parseChildFailure(childFailureLine(notRestartable)), {
      event: 'failed',
      error: 'bad file',
      restart: false,
    })
    assert.deepEqual(parseChildFailure(childFailureLine('plain')), {
      event: 'failed',
      error: 'plain',
      restart: true,
    })
    for (const other of ['{"event":"ready"}', '{"event":"failed"', '{"event":"failed","error":3}', 'failed'])
      assert.equal(parseChildFailure(other), undefined, other)
  })
})
