import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type ProcessEvent, ProcessSupervisor, processEventLine } from '../../../actors/index.ts'

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
      'crashy failed too often; giving up on it',
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
})
