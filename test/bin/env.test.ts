import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  connectNats,
  getTask,
  startActorSystem,
  startEnvController,
  startEnvWorker,
  tasks,
} from '../../actors/index.ts'
import { formatEnvWorkers, tryDifficulty } from '../../bin/commands/env.ts'
import { CliError } from '../../bin/errors.ts'
import { suiteNatsServer } from '../support/suite-nats-server.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin/env', () => {
  it("tryDifficulty - a level outside the task's levels names the option, the value and the levels", () => {
    const calc = getTask('calc')
    assert.equal(tryDifficulty(calc, undefined), undefined)
    assert.equal(tryDifficulty(calc, 7), 7)
    for (const level of [0, 8])
      assert.throws(
        () => tryDifficulty(calc, level),
        (err: Error) =>
          err instanceof CliError &&
          err.message ===
            `option '--difficulty <d>' argument '${level}' is invalid: task 'calc' has levels 1..7`,
      )
  })

  it('env try - a too-high difficulty is reported once, on one line', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--difficulty', '99'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      "triad: option '--difficulty <d>' argument '99' is invalid: task 'calc' has levels 1..7\n",
    )
    assert.equal(r.stdout, '')
  })

  it('env try - a level within the range plays the episode at that level', async () => {
    const r = await runTriad([
      'env',
      'try',
      'calc',
      '--difficulty',
      '3',
      '--seed',
      '4',
      '--error-rate',
      '0',
      '--json',
    ])
    assert.equal(r.code, 0, r.stderr)
    const t = JSON.parse(r.stdout) as { task: string; difficulty: number }
    assert.equal(t.task, 'calc')
    assert.equal(t.difficulty, 3)
  })

  it('env try - a task file that does not exist is reported on one line, naming it', async () => {
    const r = await runTriad(['env', 'try', 'mytasks/missing.ts'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, 'triad: cannot load task file mytasks/missing.ts: no such file\n')
    assert.equal(r.stdout, '')
  })

  it('env try - a split other than train or eval is refused', async () => {
    const r = await runTriad(['env', 'try', 'calc', '--split', 'test'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, "triad: option '--split <split>' argument 'test' is invalid: use train or eval\n")
  })
})

describe('bin/env list', () => {
  const nats = suiteNatsServer('triad-envlist-js-')

  it("triad env list - a table of the controller's workers; --json its answer for scripts", async () => {
    const run = `envlist${process.pid}`
    const t = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const system = startActorSystem({ name: 'envlist' })
    const controller = await startEnvController(system, t, { run, tasks, checkMs: 50 })
    const worker = await startEnvWorker(system, t, { run, id: 'w1', tasks, capacity: 4, heartbeatMs: 100 })
    try {
      let json: { workers: { worker: string; state: string; capacity: number; tasks: string[] }[] } = {
        workers: [],
      }
      // The worker registers with its first heartbeat.
      const deadline = Date.now() + 15_000
      while (json.workers.length === 0 && Date.now() < deadline) {
        const r = await runTriad(['env', 'list', '--nats', nats.url, '--run', run, '--json'])
        assert.equal(r.code, 0, r.stderr)
        json = JSON.parse(r.stdout)
      }
      assert.deepEqual(
        json.workers.map((w) => [w.worker, w.state, w.capacity]),
        [['w1', 'live', 4]],
      )
      const table = await runTriad(['env', 'list', '--nats', nats.url, '--run', run])
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /│ worker +│ state +│ active +│ capacity +│ last seen +│ tasks +│/)
      assert.match(
        table.stdout,
        new RegExp(`│ w1 +│ live +│ 0 +│ 4 +│ \\d+\\.\\d s +│ ${Object.keys(tasks).join(',')} +│`),
      )
      assert.match(table.stdout, /^counts: .*\bstarted 0\b/m)
    } finally {
      await worker.stop()
      await controller.stop()
      await system.stop()
      await t.close()
    }
  })

  it('formatEnvWorkers - no workers says so; the counts sorted on one line', () => {
    assert.equal(
      formatEnvWorkers({ workers: [], counts: { started: 2, refused: 1 } }),
      'no env workers registered with the controller\ncounts: refused 1, started 2\n',
    )
  })
})
