import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { appendRunLog, createRunDir, writeEvalResult } from '../../actors/index.ts'
import { formatMetricsLine } from '../../actors/testing.ts'
import { METRICS_CSV_COLUMNS } from '../../bin/metrics/tidy-rows.ts'
import { syntheticMetrics } from '../support/synthetic-run.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin - the JSON outputs of the commands', () => {
  it("status, monitor, report and metrics --json of one finished run use the run files' names for the same things", async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-json-'))
    const dir = await createRunDir({
      runsDir,
      name: 'vocab',
      recipe: { name: 'vocab', tasks: [{ name: 'calc' }] },
    })
    await appendRunLog(dir, 'run', { event: 'start', time: 1_000, recipe: 'vocab.ts' })
    appendFileSync(dir.metricsFile, `${syntheticMetrics(5).map(formatMetricsLine).join('\n')}\n`)
    const evalFile = await writeEvalResult(dir, 'final-2000', {
      step: 4,
      k: 2,
      rows: [{ checkpoint: 'step-4', task: 'calc', n: 1, avg_at_k: 0.5, avg_at_k_se: 0 }],
    })
    const stop = { event: 'stop', time: 3_000, reason: 'steps', steps: 4, restarts: { learner: 0 }, evalFile }
    await appendRunLog(dir, 'run', stop)

    // The end of the run, from status and from monitor: one object, the stop event's values.
    const status = await runTriad(['status', '--run', dir.id, '--runs-dir', runsDir, '--json'])
    const monitor = await runTriad(['monitor', '--run', dir.id, '--runs-dir', runsDir, '--once', '--json'])
    assert.equal(status.code, 0, status.stderr)
    assert.equal(monitor.code, 0, monitor.stderr)
    const ended = JSON.parse(status.stdout)
    assert.deepEqual(JSON.parse(monitor.stdout), ended)
    assert.deepEqual(
      [ended.step, ended.time, ended.reason, ended.evalFile, ended.restarts],
      [stop.steps, stop.time, stop.reason, stop.evalFile, stop.restarts],
    )

    // report --json: the file it wrote and what it holds; without --json, the path alone.
    const report = await runTriad(['report', dir.path, '--json'])
    assert.equal(report.code, 0, report.stderr)
    const line = JSON.parse(report.stdout)
    assert.deepEqual(Object.keys(line), ['report', 'runs', 'charts', 'constants', 'lines', 'evals', 'bytes'])
    assert.deepEqual(
      [line.report, line.runs, line.evals, line.lines],
      [join(dir.path, 'report.html'), 1, 1, 20],
    )
    assert.equal(line.bytes, readFileSync(line.report).length)

    // metrics --json: the rows of the tidy table, the CSV's columns.
    const metrics = await runTriad(['metrics', dir.path, '--json', '--key', 'loss/'])
    assert.equal(metrics.code, 0, metrics.stderr)
    const rows = JSON.parse(metrics.stdout) as Record<string, unknown>[]
    assert.equal(rows.length, 5)
    for (const row of rows) assert.deepEqual(Object.keys(row), [...METRICS_CSV_COLUMNS])
  })
})
