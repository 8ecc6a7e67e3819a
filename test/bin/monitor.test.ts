import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  type NatsTransport,
  recordRunTransport,
  runDirPaths,
  startNatsServer,
} from '../../actors/index.ts'
import { ManualClock } from '../../actors/testing.ts'
import { type MonitorSnapshot, monitorOnce, waitingText } from '../../bin/commands/monitor.ts'
import { CliError } from '../../bin/errors.ts'
import { formatDuration, MetricsState, renderSnapshot } from '../../bin/monitor/metrics-state.ts'
import { MessageRegistry, MetricsReport, Subjects } from '../../protocols/index.ts'
import { syntheticMetrics, syntheticSftMetrics } from '../support/synthetic-run.ts'
import { runTriad, startTriad, type TriadProcess } from '../support/triad-process.ts'
import { within } from '../support/within.ts'

/** A table row with these cells, as a pattern (cells escaped, separated by `│`). */
const row = (...cells: string[]) =>
  new RegExp(`│ ${cells.map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s*│\\s*')}\\s*│`)

const EXPECTED_ROWS = [
  // task, success, reward, difficulty at step 9 of 10 (syntheticMetrics)
  row('calc', '0.325', '0.400', '1'),
  row('maze', '0.525', '0.400', '1'),
  row('sql ', '0.425', '0.400', '1'),
]

/**
 * Publishes the synthetic metrics of run `run` every 100 ms until `until` settles (core NATS is
 * at-most-once and the child subscribes at some point), with a 60 s deadline.
 */
async function publishUntil<T>(
  nats: NatsTransport,
  run: string,
  until: Promise<T>,
  lines = syntheticMetrics(10),
): Promise<T> {
  let settled = false
  const done = until.then((v) => {
    settled = true
    return v
  })
  const deadline = Date.now() + 60_000
  while (!settled && Date.now() < deadline) {
    for (const line of lines) nats.publish(Subjects.metrics(run, line.role), MetricsReport.make(line))
    await Promise.race([done, new Promise((r) => setTimeout(r, 100))])
  }
  if (!settled) throw new Error('the monitor did not finish within 60 s')
  return done
}

/** Starts `triad monitor` on run `run` at the local NATS server, redrawing every 200 ms until stopped. */
const startLiveMonitor = (run: string) =>
  startTriad(['monitor', '--nats', 'nats://127.0.0.1:4222', '--run', run, '--interval', '200'])

/**
 * Resolves with the first value other than undefined or false that `find` returns for the lines
 * `monitor` printed so far, checked every 50 ms (the `publishUntil` that waits on it holds the
 * deadline).
 */
function whenShown<T>(monitor: TriadProcess, find: (lines: string[]) => T | undefined | false): Promise<T> {
  return new Promise<T>((resolve) => {
    const timer = setInterval(() => {
      const found = find(monitor.stdout)
      if (found !== undefined && found !== false) {
        clearInterval(timer)
        resolve(found)
      }
    }, 50)
  })
}

describe('bin/monitor', () => {
  it('renderSnapshot - per-task success and reward are over the newest 256 episodes, with the count shown', () => {
    const state = new MetricsState()
    // 40 rollout reports of 8 calc episodes each: the first 20 all failed (reward 0), the last 20 all solved (reward 1).
    for (let k = 0; k < 40; k++) {
      const p = k < 20 ? 0 : 1
      const values = { 'rollout/episodes/calc': 8, 'rollout/success/calc': p, 'rollout/reward/calc': p }
      state.add({ role: 'rollout', id: '0', step: k, time: 1000 + k, values })
      // The same report seen again (core NATS redelivery, a replayed file) counts once.
      state.add({ role: 'rollout', id: '0', step: k, time: 1000 + k, values })
    }
    // The newest 32 reports hold 256 episodes: 12 x 8 failed, 20 x 8 solved -> 160 / 256 = 0.625.
    assert.deepEqual(state.episodeWindow('calc'), { episodes: 256, success: 0.625, reward: 0.625 })
    assert.match(renderSnapshot(state, { run: 'w' }), row('calc', '0.625', '0.625', '-', '256'))
    // Before the window fills, all episodes so far; reports of 10 episodes keep whole reports.
    const young = new MetricsState()
    for (const [k, p] of [0.5, 0.1, 0.2].entries())
      young.add({
        role: 'rollout',
        id: '0',
        step: k,
        time: k,
        values: { 'rollout/episodes/sql': 10, 'rollout/success/sql': p },
      })
    const w = young.episodeWindow('sql')!
    assert.equal(w.episodes, 30)
    assert.ok(Math.abs(w.success - 8 / 30) < 1e-12, `${w.success}`)
    assert.equal(young.episodeWindow('calc'), undefined)
    // A smaller window keeps the fewest newest reports that hold it: 10 + 10 >= 15.
    const small = new MetricsState(15)
    for (const [k, p] of [1, 0, 0.5].entries())
      small.add({
        role: 'rollout',
        id: '0',
        step: k,
        time: k,
        values: { 'rollout/episodes/sql': 10, 'rollout/success/sql': p },
      })
    assert.deepEqual(small.episodeWindow('sql'), { episodes: 20, success: 0.25 })
  })

  it('renderSnapshot - progress bar, a row per task, tokens/s summed over engines, restarts', () => {
    const state = new MetricsState()
    for (const line of syntheticMetrics(10)) state.add(line)
    const text = renderSnapshot(state, { run: 'r1', maxSteps: 18, barSize: 10 })
    const lines = text.split('\n')
    assert.equal(lines[0], `run r1  ${'\u2588'.repeat(5)}${'\u2591'.repeat(5)} 50%  step 9/18`)
    for (const pattern of EXPECTED_ROWS) assert.match(text, pattern)
    // tokens/s 800 + 600, staleness 1.5 / 3, loss 1/10, restarts 1, 40 reports
    assert.match(text, row('1400', '1.50', '3', '0.1000', '1', '40'))
  })

  it('renderSnapshot - during the cold-start SFT: a bar of SFT steps, loss, tokens/s, grad norm, ETA', () => {
    const state = new MetricsState()
    for (const line of syntheticSftMetrics(60, 120)) state.add(line)
    const text = renderSnapshot(state, { run: 'r1', maxSteps: 18, barSize: 10 })
    const lines = text.split('\n')
    assert.equal(
      lines[0],
      `run r1  cold-start SFT  ${'\u2588'.repeat(5)}${'\u2591'.repeat(5)} 50%  step 60/120`,
    )
    // loss 2 - 60/100, 4000 tokens/s, grad norm 0.5; 1 s per step and 60 steps left: 1m 00s
    assert.match(text, row('1.4000', '4000', '0.500', '1m 00s'))
    assert.doesNotMatch(text, /per-task/)
  })

  it('renderSnapshot - once the SFT reached its total, the RL view with one line on the SFT', () => {
    const state = new MetricsState()
    for (const line of syntheticSftMetrics(120, 120)) state.add(line)
    const text = renderSnapshot(state, { run: 'r1', maxSteps: 18, barSize: 10 })
    assert.equal(
      text.split('\n').slice(0, 3).join('\n'),
      `run r1  ${'\u2591'.repeat(10)} 0%  step 0/18\ncold-start SFT done: 120/120 steps, final loss 0.8000\n(no per-task metrics yet)`,
    )
    // the first RL step ends the SFT view even without a total
    const noTotal = new MetricsState()
    for (const line of syntheticSftMetrics(3, 120)) {
      delete line.values['sft/steps_total']
      noTotal.add(line)
    }
    assert.match(renderSnapshot(noTotal, { run: 'r2' }), /^run r2 {2}cold-start SFT {2}step 3\n/)
    for (const line of syntheticMetrics(2)) noTotal.add(line)
    assert.match(
      renderSnapshot(noTotal, { run: 'r2' }),
      /^run r2 {2}step 1\ncold-start SFT done: 3 steps, final loss 1\.9700\n/,
    )
  })

  it('renderSnapshot - restarts counts the processes the supervisor restarted too', () => {
    const state = new MetricsState()
    for (const line of syntheticMetrics(10)) state.add(line)
    state.add({
      role: 'run',
      id: '77',
      step: 9,
      time: 0,
      values: { 'process/learner/restarts': 7, 'process/rollout/restarts': 2 },
    })
    // 1 actor restart (runtime/restarts) + 9 process restarts
    assert.match(renderSnapshot(state, { run: 'r1' }), row('1400', '1.50', '3', '0.1000', '10', '41'))
    // with the services' actor restarts (2) instead of the metric
    assert.match(
      renderSnapshot(state, { run: 'r1', serviceRestarts: 2 }),
      row('1400', '1.50', '3', '0.1000', '11', '41'),
    )
  })

  it('formatDuration - seconds, minutes, hours', () => {
    assert.deepEqual([0, 41_600, 60_000, 192_000, 3_600_000, 3_900_000].map(formatDuration), [
      '0s',
      '42s',
      '1m 00s',
      '3m 12s',
      '1h 00m',
      '1h 05m',
    ])
  })

  it('renderSnapshot - with a time budget the bar follows whichever budget is further along; the header shows both', () => {
    const state = new MetricsState()
    for (const line of syntheticMetrics(10)) state.add(line) // learner step 9
    const first = (o: Parameters<typeof renderSnapshot>[1]) => renderSnapshot(state, o).split('\n')[0]
    const bar = (full: number) => `${'\u2588'.repeat(full)}${'\u2591'.repeat(10 - full)}`
    // the time budget ends first: 9 of 100 steps, 6 of 10 minutes
    assert.equal(
      first({ run: 'r1', maxSteps: 100, barSize: 10, time: { elapsedMs: 360_000, limitMs: 600_000 } }),
      `run r1  ${bar(6)} 60%  step 9/100  time 6m 00s/10m 00s`,
    )
    // the step budget ends first: 9 of 18 steps, 1 of 10 minutes
    assert.equal(
      first({ run: 'r1', maxSteps: 18, barSize: 10, time: { elapsedMs: 60_000, limitMs: 600_000 } }),
      `run r1  ${bar(5)} 50%  step 9/18  time 1m 00s/10m 00s`,
    )
    // a time budget only
    assert.equal(
      first({ run: 'r1', barSize: 10, time: { elapsedMs: 180_000, limitMs: 600_000 } }),
      `run r1  ${bar(3)} 30%  step 9  time 3m 00s/10m 00s`,
    )
    // past the limit (the run is stopping): full, and the time shown stops at the limit
    assert.equal(
      first({ run: 'r1', maxSteps: 100, barSize: 10, time: { elapsedMs: 660_000, limitMs: 600_000 } }),
      `run r1  ${bar(10)} 100%  step 9/100  time 10m 00s/10m 00s`,
    )
    // during the SFT, which the time budget includes
    const sft = new MetricsState()
    for (const line of syntheticSftMetrics(60, 120)) sft.add(line)
    assert.equal(
      renderSnapshot(sft, { run: 'r1', barSize: 10, time: { elapsedMs: 65_000, limitMs: 600_000 } }).split(
        '\n',
      )[0],
      `run r1  cold-start SFT  ${bar(5)} 50%  step 60/120  time 1m 05s/10m 00s`,
    )
  })

  it("MetricsState.rate - a counter's change between each actor's two newest reports, per second, summed", () => {
    const state = new MetricsState()
    const add = (id: string, time: number, tokens: number) =>
      state.add({ role: 'rollout', id, step: 1, time, values: { 'rollout/generated_tokens': tokens } })
    add('a', 1_000, 100)
    assert.equal(state.rate('rollout/generated_tokens'), undefined, 'one report: no rate yet')
    add('a', 3_000, 500) // 200/s
    add('b', 1_000, 0)
    add('b', 2_000, 50) // 50/s
    assert.equal(state.rate('rollout/generated_tokens'), 250)
    add('a', 2_500, 9_999) // an older report arriving late changes nothing
    assert.equal(state.value('rollout/generated_tokens', 'sum'), 550)
    assert.equal(state.rate('rollout/generated_tokens'), 250)
    add('b', 3_000, 10) // b restarted: its counter went down and is left out
    assert.equal(state.rate('rollout/generated_tokens'), 200)
    assert.equal(state.rate('engine/tokens_per_s'), undefined)
  })

  it("renderSnapshot - tokens/s is the engines' report, else the rate of the rollout's generated tokens", () => {
    const state = new MetricsState()
    const rollout = (step: number, time: number, tokens: number) =>
      state.add({
        role: 'rollout',
        id: 'rollout',
        step,
        time,
        values: { 'rollout/generated_tokens': tokens },
      })
    // the tiny recipe's RL: rollout reports at steps 2 and 3, 687 ms apart, no engine report yet
    rollout(2, 1_000, 566)
    assert.match(renderSnapshot(state, { run: 'r1' }), row('-', '-', '-', '-', '-', '1'))
    rollout(3, 1_687, 655)
    // 89 tokens in 0.687 s
    assert.match(renderSnapshot(state, { run: 'r1' }), row('129.5', '-', '-', '-', '-', '2'))
    state.add({ role: 'policy', id: 'fresh', step: 3, time: 2_000, values: { 'engine/tokens_per_s': 800 } })
    assert.match(renderSnapshot(state, { run: 'r1' }), row('800.0', '-', '-', '-', '-', '3'))
  })

  it('renderSnapshot - without a step limit or metrics it says so', () => {
    const text = renderSnapshot(new MetricsState(), { run: 'r2' })
    assert.match(text, /^run r2 {2}step 0\n\(no per-task metrics yet\)\n/)
  })

  it('monitorOnce - collects the run metrics for the wait window, ignoring other runs', async () => {
    const clock = new ManualClock(0)
    const t = new InProcessTransport(clock)
    const snapshot = monitorOnce(t, { run: 'r3', waitMs: 1_000, clock })
    for (const line of syntheticMetrics(10))
      t.publish(Subjects.metrics('r3', line.role), MetricsReport.make(line))
    t.publish(
      Subjects.metrics('other', 'rollout'),
      MetricsReport.make({
        role: 'rollout',
        id: '0',
        step: 99,
        time: 0,
        values: { 'rollout/success/chess': 1 },
      }),
    )
    clock.advance(1_000)
    const text = await snapshot
    assert.match(text, /^run r3 {2}step 9\n/)
    for (const pattern of EXPECTED_ROWS) assert.match(text, pattern)
    assert.doesNotMatch(text, /chess/)
    await t.close()
  })

  it('monitorOnce - no metrics within the window is a clear error that names the runs seen there', async () => {
    const clock = new ManualClock(0)
    const t = new InProcessTransport(clock)
    const snapshot = monitorOnce(t, { run: 'quiet', url: 'nats://here:4222', waitMs: 500, clock })
    for (const run of ['loud-2', 'loud-1'])
      t.publish(
        Subjects.metrics(run, 'learner'),
        MetricsReport.make({ role: 'learner', id: '0', step: 1, time: 0, values: { 'loss/total': 1 } }),
      )
    clock.advance(500)
    await assert.rejects(
      snapshot,
      (err: Error) =>
        err instanceof CliError &&
        err.message ===
          "no metrics on triad.quiet.metrics.> at nats://here:4222 within 500 ms; is run 'quiet' running? " +
            'runs that published metrics on triad.*.metrics.> at nats://here:4222 meanwhile: loud-1, loud-2. ' +
            'A run in one process on the in-process transport cannot be watched from outside it.',
    )
    const none = monitorOnce(t, { run: 'quiet', url: 'nats://here:4222', waitMs: 500, clock })
    clock.advance(500)
    await assert.rejects(none, (err: Error) =>
      err.message.includes(
        "; is run 'quiet' running? no run published metrics at nats://here:4222 meanwhile (triad run without --nats",
      ),
    )
    await t.close()
  })

  it('waitingText - where the monitor waits, then after 5 s the runs seen on that server or that none was', () => {
    const nats = { url: 'nats://127.0.0.1:40533', source: 'recorded by triad run in runs/r1/logs/run.jsonl' }
    assert.equal(
      waitingText({ run: 'r1', nats, elapsedMs: 4_999, seen: ['r2'] }),
      'run r1: waiting for metrics on triad.r1.metrics.> at nats://127.0.0.1:40533 (recorded by triad run in runs/r1/logs/run.jsonl)\n',
    )
    assert.equal(
      waitingText({ run: 'r1', nats, elapsedMs: 6_000, seen: ['r2', 'r3'] }).split('\n')[1],
      'nothing from run r1 in 6s; runs that published metrics on triad.*.metrics.> at nats://127.0.0.1:40533 meanwhile: r2, r3',
    )
    assert.match(
      waitingText({ run: 'r1', nats, elapsedMs: 5_000, seen: [] }).split('\n')[1]!,
      /^nothing from run r1 in 5s; no run published metrics at nats:\/\/127\.0\.0\.1:40533 meanwhile \(triad run without --nats starts its own nats-server/,
    )
  })

  it('renderSnapshot - the step total comes from the run/max_steps report of triad run, else the recipe budget', () => {
    const state = new MetricsState()
    for (const line of syntheticMetrics(10)) state.add(line)
    assert.match(renderSnapshot(state, { run: 'r1', budgetMaxSteps: 30 }), /^run r1 .* 30% {2}step 9\/30\n/)
    state.add({ role: 'run', id: '77', step: 9, time: 0, values: { 'run/max_steps': 18 } })
    assert.match(renderSnapshot(state, { run: 'r1', budgetMaxSteps: 30 }), /^run r1 .* 50% {2}step 9\/18\n/)
    assert.match(renderSnapshot(state, { run: 'r1', maxSteps: 90 }), /^run r1 .* 10% {2}step 9\/90\n/)
  })

  it("renderSnapshot - the loss column is the learner's loss/total, else its policy/loss", () => {
    const state = new MetricsState()
    state.add({ role: 'learner', id: 'l', step: 3, time: 0, values: { 'policy/loss': 0.25 } })
    assert.match(renderSnapshot(state, { run: 'r1' }), row('-', '-', '-', '0.2500', '-', '1'))
    state.add({
      role: 'learner',
      id: 'l',
      step: 4,
      time: 0,
      values: { 'loss/total': 0.5, 'policy/loss': 0.25 },
    })
    assert.match(renderSnapshot(state, { run: 'r1' }), row('-', '-', '-', '0.5000', '-', '2'))
  })

  it('triad monitor --once - prints a snapshot of a run from the NATS metrics subjects and services', async () => {
    const run = `mon-${process.pid}`
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'test', id: '0' })
    // A service of the run whose actor restarted twice, and one of another run.
    const served = await Promise.all(
      [run, 'other-run'].map((r, i) =>
        nats.serve(`triad.${r}.montest.ping`, {
          accepts: new MessageRegistry([MetricsReport]),
          handler: (m) => m,
          service: {
            name: 'triad-montest',
            description: 'monitor test',
            metadata: { run: r },
            stats: () => ({ restarts: 2 + 5 * i }),
          },
        }),
      ),
    )
    const child = startTriad([
      'monitor',
      '--nats',
      'nats://127.0.0.1:4222',
      '--run',
      run,
      '--once',
      '--wait',
      '1500',
      '--max-steps',
      '20',
    ])
    const { code } = await publishUntil(nats, run, child.exited)
    await Promise.all(served.map((s) => s.stop()))
    await nats.close()
    const out = child.stdout.join('\n')
    assert.equal(code, 0, child.stderr())
    assert.match(out, new RegExp(`^run ${run} .* 45%  step 9/20`))
    for (const pattern of EXPECTED_ROWS) assert.match(out, pattern)
    // restarts from the run's service (2), not the other run's (7) nor the metric (1)
    assert.match(out, row('1400', '1.50', '3', '0.1000', '2'))
  })

  it('triad monitor --once - during the cold-start SFT: the SFT progress bar, loss, tokens/s and ETA', async () => {
    const run = `monsft-${process.pid}`
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'test', id: '2' })
    const child = startTriad([
      'monitor',
      '--nats',
      'nats://127.0.0.1:4222',
      '--run',
      run,
      '--once',
      '--wait',
      '1500',
    ])
    const { code } = await publishUntil(nats, run, child.exited, syntheticSftMetrics(30, 120))
    await nats.close()
    const out = child.stdout.join('\n')
    assert.equal(code, 0, child.stderr())
    assert.match(out, new RegExp(`^run ${run} {2}cold-start SFT {2}\\S+ 25% {2}step 30/120$`, 'm'))
    // 1 s per step, 90 steps left
    assert.match(out, row('1.7000', '4000', '0.500', '1m 30s'))
  })

  it('triad monitor - redraws live until stopped', async () => {
    const run = `live-${process.pid}`
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'test', id: '1' })
    const child = startLiveMonitor(run)
    const shown = whenShown(child, (lines) => EXPECTED_ROWS.every((p) => p.test(lines.join('\n'))))
    await publishUntil(nats, run, shown)
    await nats.close()
    assert.match(
      child.stdout[0]!,
      new RegExp(`^run ${run}: waiting for metrics on triad\\.${run}\\.metrics\\.>`),
    )
    child.child.kill('SIGTERM')
    assert.equal((await child.exited).code, 0, child.stderr())
  })

  it('triad monitor - a run in one process cannot be attached to, and the error says where its metrics are', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-monitor-runs-'))
    const dir = runDirPaths(join(runsDir, 'solo-20261129-120000'))
    mkdirSync(dir.path)
    await recordRunTransport(dir, { transport: 'in-process', reason: 'nats-server not found on PATH' })
    // The NATS URL does not answer: the refusal comes before any connection.
    const child = startTriad([
      'monitor',
      '--run',
      dir.id,
      '--runs-dir',
      runsDir,
      '--nats',
      'nats://127.0.0.1:1',
    ])
    assert.equal((await child.exited).code, 1)
    assert.match(
      child.stderr(),
      new RegExp(
        `^triad: run ${dir.id} runs in one process on the in-process transport, so triad monitor cannot attach to it: .*${dir.metricsFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
      ),
    )
  })

  it('triad monitor - a run that publishes nothing: where it waits, then the runs that did publish there', async () => {
    const run = `nosuchrun-${process.pid}`
    const other = `busy-${process.pid}`
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run: other, role: 'test', id: '3' })
    const child = startLiveMonitor(run)
    const hint = `nothing from run ${run} in `
    const listed = whenShown(child, (lines) => lines.find((l) => l.startsWith(hint) && l.includes(other)))
    const line = await publishUntil(nats, other, listed)
    await nats.close()
    child.child.kill('SIGTERM')
    assert.equal((await child.exited).code, 0, child.stderr())
    assert.equal(
      child.stdout[0],
      `run ${run}: waiting for metrics on triad.${run}.metrics.> at nats://127.0.0.1:4222 (--nats)`,
    )
    assert.match(
      line,
      new RegExp(
        `^${hint}\\d+s; runs that published metrics on triad\\.\\*\\.metrics\\.> at nats://127\\.0\\.0\\.1:4222 meanwhile: .*\\b${other}\\b`,
      ),
    )
  })

  it('triad monitor --once - without --nats: the URL recorded in the run directory, the step total from its recipe', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-monitor-runs-'))
    const dir = runDirPaths(join(runsDir, `rec-${process.pid}`))
    mkdirSync(dir.path)
    writeFileSync(dir.recipeFile, JSON.stringify({ name: 'rec', budget: { maxSteps: 36 } }))
    await recordRunTransport(dir, { transport: 'nats', url: 'nats://127.0.0.1:4222' })
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run: dir.id, role: 'test', id: '4' })
    const child = startTriad(['monitor', '--run', dir.id, '--runs-dir', runsDir, '--once', '--wait', '1500'])
    const { code } = await publishUntil(nats, dir.id, child.exited)
    await nats.close()
    assert.equal(code, 0, child.stderr())
    assert.match(child.stdout.join('\n'), new RegExp(`^run ${dir.id} .* 25%  step 9/36$`, 'm'))
  })

  it('triad monitor - a URL recorded by a run that ended is a clear error that says where it came from', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-monitor-runs-'))
    const dir = runDirPaths(join(runsDir, 'gone-20261129-120000'))
    mkdirSync(dir.path)
    await recordRunTransport(dir, { transport: 'nats', url: 'nats://127.0.0.1:1' })
    const child = startTriad(['monitor', '--run', dir.id, '--runs-dir', runsDir, '--once'])
    assert.equal((await child.exited).code, 1)
    assert.match(
      child.stderr(),
      new RegExp(
        `^triad: cannot connect to NATS at nats://127\\.0\\.0\\.1:1.* \\(recorded by triad run in ${join(dir.logsDir, 'run.jsonl').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; has the run ended\\?\\)\n$`,
      ),
    )
  })

  it('triad monitor - a NATS URL that does not answer is a clear error', async () => {
    const child = startTriad(['monitor', '--nats', 'nats://127.0.0.1:1', '--run', 'x', '--once'])
    assert.equal((await child.exited).code, 1)
    assert.match(child.stderr(), /^triad: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/)
  })
  it('triad monitor --once --json - the snapshot as one JSON object for scripts', async () => {
    const run = `monjson-${process.pid}`
    const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'test', id: '5' })
    const child = startTriad([
      'monitor',
      '--nats',
      'nats://127.0.0.1:4222',
      '--run',
      run,
      '--once',
      '--json',
      '--wait',
      '1500',
      '--max-steps',
      '20',
    ])
    const { code } = await publishUntil(nats, run, child.exited)
    await nats.close()
    assert.equal(code, 0, child.stderr())
    assert.equal(child.stdout.length, 1, 'one line')
    const snap = JSON.parse(child.stdout[0]!) as MonitorSnapshot
    assert.equal(snap.run, run)
    assert.equal(snap.step, 9)
    assert.equal(snap.max_steps, 20)
    assert.equal(snap.ended, false)
    assert.equal(snap.finished, null)
    assert.equal(snap.metrics['rollout/success/calc'], 0.325)
    assert.ok(snap.reports >= 10)
  })

  it("triad monitor - the live view exits when the run's last report says it ended: 0 when finished, 1 when stopped before its budget", async () => {
    for (const finished of [true, false]) {
      const run = `monend${finished ? 'f' : 's'}-${process.pid}`
      const nats = await connectNats({ servers: 'nats://127.0.0.1:4222', run, role: 'test', id: '6' })
      const child = startLiveMonitor(run)
      const shown = whenShown(child, (lines) => EXPECTED_ROWS.every((p) => p.test(lines.join('\n'))))
      await publishUntil(nats, run, shown)
      const time = Date.UTC(2026, 11, 1, 12)
      const last = {
        role: 'run',
        id: '1',
        step: 9,
        time,
        values: { 'run/ended': 1, 'run/finished': finished ? 1 : 0 },
      }
      const { code } = await publishUntil(nats, run, child.exited, [last])
      await nats.close()
      const at = `at step 9 (${new Date(time).toISOString()})`
      if (finished) {
        assert.equal(code, 0, child.stderr())
        assert.equal(child.stdout.at(-1), `run ${run} finished ${at}`)
      } else {
        assert.equal(code, 1)
        assert.equal(
          child.stderr(),
          `triad: run ${run} stopped before its budget ${at}: interrupted or failed\n`,
        )
      }
    }
  })

  it('triad monitor - the live view exits 3 when its NATS server went away and stayed away', async () => {
    const store = mkdtempSync(join(tmpdir(), 'triad-monitor-gone-'))
    const server = await startNatsServer({ monitorPort: false, storeDir: store })
    const run = `mongone-${process.pid}`
    try {
      const nats = await connectNats({ servers: server.url, run, role: 'test', id: '7' })
      const child = startTriad([
        'monitor',
        '--nats',
        server.url,
        '--run',
        run,
        '--interval',
        '200',
        '--server-timeout',
        '1000',
      ])
      const shown = whenShown(child, (lines) => EXPECTED_ROWS.every((p) => p.test(lines.join('\n'))))
      await publishUntil(nats, run, shown)
      await nats.close()
      await server.stop()
      const { code } = await within(
        child.exited,
        30_000,
        'the monitor did not exit within 30 s of the server stop',
      )
      assert.equal(code, 3, child.stderr())
      assert.match(
        child.stderr(),
        new RegExp(
          `^triad: the NATS server at ${server.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} went away \\(unreachable for \\d+s\\); has run ${run} ended\\?`,
        ),
      )
    } finally {
      await server.stop()
    }
  })

  it('triad monitor and triad status - a --run whose NATS URL is not recorded is an error, never the default server', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-monitor-runs-'))
    const missing = await runTriad(['monitor', '--run', 'absent-run', '--runs-dir', runsDir, '--once'])
    assert.equal(missing.code, 2, 'no such run directory is a bad argument')
    assert.equal(
      missing.stderr,
      `triad: cannot find the NATS server of run absent-run: there is no run directory ${join(runsDir, 'absent-run')}; pass --runs-dir with the folder that holds the run directory, or --nats with the URL triad run printed\n`,
    )
    const dir = runDirPaths(join(runsDir, 'norecord-20261201-120000'))
    mkdirSync(dir.path)
    const status = await runTriad(['status', '--run', dir.id, '--runs-dir', runsDir])
    assert.equal(status.code, 1)
    assert.equal(
      status.stderr,
      `triad: cannot find the NATS server of run ${dir.id}: ${join(dir.logsDir, 'run.jsonl')} records no NATS server; pass --runs-dir with the folder that holds the run directory, or --nats with the URL triad run printed\n`,
    )
    assert.equal(status.stdout, '')
  })
})
