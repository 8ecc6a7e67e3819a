import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  ProcessRestartReport,
  ProcessSupervisor,
  RUN_ENDED,
  RUN_FINISHED,
  RUN_MAX_STEPS,
  startNatsServer,
} from '../../../actors/index.ts'
import { ManualClock, processRestartsKey } from '../../../actors/testing.ts'
import { watchMetrics } from '../../../bin/commands/monitor.ts'
import { MetricsState, renderSnapshot, totalRestarts } from '../../../bin/monitor/metrics-state.ts'
import { collectMetricsReports } from '../../support/metrics-reports.ts'

/** Resolves when `check` holds, polled every 20 ms; rejects after `ms`. */
async function waitFor(check: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('actors/run/process-restarts', () => {
  it('process-restarts - real children restarted by the supervisor are counted, reported over NATS, and shown in the restarts column', async () => {
    const nats = await startNatsServer({
      monitorPort: false,
      storeDir: mkdtempSync(join(tmpdir(), 'triad-prr-')),
    })
    const t = await connectNats({ servers: nats.url, run: 'prr', role: 'run', id: '1' })
    const state = new MetricsState()
    const sub = watchMetrics(t, 'prr', state)
    const supervisor = new ProcessSupervisor({
      maxRestarts: 10,
      withinMs: 60_000,
      backoff: { initialMs: 50, maxMs: 50, factor: 1 },
      onLimit: 'stop',
    })
    const report = new ProcessRestartReport(t, {
      run: 'prr',
      id: '1',
      step: () => 4,
      names: ['learner', 'rollout'],
    })
    supervisor.on((e) => report.onEvent(e))
    // The "learner" exits with code 1 at once, three times (a file counts its starts); then it stays up.
    const counter = join(mkdtempSync(join(tmpdir(), 'triad-prr-')), 'starts')
    const source = `const fs = require('node:fs'); const f = ${JSON.stringify(counter)};
      const n = fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) + 1 : 1; fs.writeFileSync(f, String(n));
      if (n <= 3) process.exit(1); setInterval(() => {}, 1000)`
    supervisor.start({ name: 'learner', command: process.execPath, args: ['-e', source] })
    supervisor.start({
      name: 'rollout',
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
    })
    try {
      await waitFor(
        () => state.value(processRestartsKey('learner'), 'sum') === 3,
        20_000,
        () => JSON.stringify(report.restarts()),
      )
      assert.deepEqual(report.restarts(), { learner: 3, rollout: 0 })
      assert.equal(state.value(processRestartsKey('rollout'), 'sum'), 0)
      assert.equal(totalRestarts(state), 3)
      // The live view's restarts column: 3, not '-'.
      assert.match(renderSnapshot(state, { run: 'prr' }), /│ -\s*│ -\s*│ -\s*│ -\s*│ 3\s*│ \d+\s*│/)
      // `triad monitor` adds the actor restarts of the run's services.
      assert.equal(totalRestarts(state, 2), 5)
    } finally {
      await supervisor.stop()
      report.stop()
      await sub.stop()
      await t.close()
      await nats.stop()
    }
  })

  it('process-restarts - reports at start, at each restart and every everyMs; nothing after stop', () => {
    const clock = new ManualClock(1_000)
    const t = new InProcessTransport(clock)
    const seen = collectMetricsReports(t, 'r').reports
    let step = 0
    const report = new ProcessRestartReport(t, {
      run: 'r',
      id: '9',
      step: () => step,
      names: ['learner'],
      clock,
      everyMs: 5_000,
    })
    const exited = { type: 'exited', name: 'learner', pid: 1, code: 1, signal: null } as const
    report.onEvent({ ...exited, next: 'stop' })
    report.onEvent({ type: 'started', name: 'learner', pid: 2, restarts: 1 })
    step = 3
    report.onEvent({ ...exited, next: 'restart', restartInMs: 200 })
    clock.advance(5_000)
    report.stop()
    clock.advance(20_000)
    assert.deepEqual(
      seen.map((r) => [r.role, r.id, r.step, r.time, r.values['process/learner/restarts']]),
      [
        ['run', '9', 0, 1_000, 0],
        ['run', '9', 3, 1_000, 1],
        ['run', '9', 3, 6_000, 1],
        ['run', '9', 3, 6_000, 1],
      ],
    )
  })

  it("process-restarts - the run's constant values (its step budget) go with every report", () => {
    const clock = new ManualClock(0)
    const t = new InProcessTransport(clock)
    const seen = collectMetricsReports(t, 'r').reports
    const report = new ProcessRestartReport(t, {
      run: 'r',
      id: '9',
      step: () => 0,
      names: ['learner'],
      values: { [RUN_MAX_STEPS]: 120 },
      clock,
      everyMs: 5_000,
    })
    clock.advance(5_000)
    report.stop()
    assert.deepEqual(
      seen.map((r) => r.values),
      Array(3).fill({ 'run/max_steps': 120, 'process/learner/restarts': 0 }),
    )
    // the monitor's progress bar ends there
    const state = new MetricsState()
    for (const r of seen) state.add(r)
    assert.match(renderSnapshot(state, { run: 'r' }), /^run r .* 0% {2}step 0\/120\n/)
  })

  it('process-restarts - stop with an outcome says in the last report that the run ended, and whether at its budget', () => {
    for (const finished of [true, false]) {
      const clock = new ManualClock(0)
      const t = new InProcessTransport(clock)
      const seen = collectMetricsReports(t, 'r').reports
      const report = new ProcessRestartReport(t, { run: 'r', id: '9', step: () => 7, names: [], clock })
      report.stop({ finished })
      report.stop({ finished })
      assert.deepEqual(
        seen.map((r) => [r.step, r.values]),
        [
          [7, {}],
          [7, { [RUN_ENDED]: 1, [RUN_FINISHED]: finished ? 1 : 0 }],
        ],
      )
    }
  })
})
