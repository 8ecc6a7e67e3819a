import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir, type MetricsLine } from '../../actors/index.ts'
import { formatMetricsLine } from '../../actors/testing.ts'
import { formatMetricsCsv, summarizeKeys, tidyRows } from '../../bin/metrics/tidy-rows.ts'
import { eventFiles, readEventFile } from '../support/tfevents-reader.ts'
import { runTriad } from '../support/triad-process.ts'

const T0 = Date.UTC(2026, 11, 1, 12)

/** A cold start of two SFT steps, then learner step 1 with the rollout reporting twice. */
const LINES: MetricsLine[] = [
  {
    role: 'learner',
    id: '0',
    step: 1,
    axis: 'sft',
    time: T0 + 1_000,
    values: { 'sft/loss': 2.5, 'sft/step': 1 },
  },
  {
    role: 'learner',
    id: '0',
    step: 2,
    axis: 'sft',
    time: T0 + 2_000,
    values: { 'sft/loss': 2, 'sft/step': 2 },
  },
  { role: 'learner', id: '0', step: 1, time: T0 + 3_000, values: { 'loss/total': 0.125 } },
  { role: 'rollout', id: 'r', step: 1, time: T0 + 3_500, values: { 'rollout/success/calc': 0.25 } },
  { role: 'rollout', id: 'r', step: 1, time: T0 + 4_500, values: { 'rollout/success/calc': 0.75 } },
]

const CSV = `step,axis,key,value,wall_time,role,id
1,sft,sft/loss,2.5,${T0 / 1000 + 1}.000,learner,0
1,sft,sft/step,1,${T0 / 1000 + 1}.000,learner,0
2,sft,sft/loss,2,${T0 / 1000 + 2}.000,learner,0
2,sft,sft/step,2,${T0 / 1000 + 2}.000,learner,0
1,learner,loss/total,0.125,${T0 / 1000 + 3}.000,learner,0
1,learner,rollout/success/calc,0.25,${T0 / 1000 + 3}.500,rollout,r
1,learner,rollout/success/calc,0.75,${T0 / 1000 + 4}.500,rollout,r
`

async function runWithMetrics() {
  const dir = await createRunDir({
    runsDir: mkdtempSync(join(tmpdir(), 'triad-metrics-')),
    name: 'm',
    recipe: { name: 'm' },
  })
  appendFileSync(dir.metricsFile, `${LINES.map(formatMetricsLine).join('\n')}\n`)
  return dir
}

describe('bin/metrics', () => {
  it('tidyRows + formatMetricsCsv - one row per value, the SFT steps on their axis, fields quoted per RFC 4180', () => {
    assert.equal(formatMetricsCsv(tidyRows(LINES)), CSV)
    assert.deepEqual(
      tidyRows(LINES, 'rollout/').map((r) => r.value),
      [0.25, 0.75],
    )
    const odd = formatMetricsCsv(
      tidyRows([{ role: 'policy', id: 'a,"b"', step: 0, time: 1, values: { k: 1, nan: Number.NaN } }]),
    )
    assert.equal(odd, 'step,axis,key,value,wall_time,role,id\n0,learner,k,1,0.001,policy,"a,""b"""\n')
    assert.deepEqual(
      summarizeKeys(tidyRows(LINES)).find((s) => s.key === 'rollout/success/calc'),
      {
        key: 'rollout/success/calc',
        points: 2,
        sources: 1,
        axis: 'learner',
        firstStep: 1,
        lastStep: 1,
        last: 0.75,
      },
    )
  })

  it('triad metrics RUN_DIR --csv / --json / summary: the tidy long table from metrics.jsonl', async () => {
    const dir = await runWithMetrics()
    const csv = await runTriad(['metrics', dir.path, '--csv'])
    assert.equal(csv.code, 0, csv.stderr)
    assert.equal(`${csv.stdout}\n`, CSV)
    const json = await runTriad(['metrics', dir.path, '--json', '--key', 'loss/'])
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual(JSON.parse(json.stdout), [
      {
        step: 1,
        axis: 'learner',
        key: 'loss/total',
        value: 0.125,
        wall_time: T0 / 1000 + 3,
        role: 'learner',
        id: '0',
      },
    ])
    const summary = await runTriad(['metrics', dir.path])
    assert.equal(summary.code, 0, summary.stderr)
    assert.match(summary.stdout, new RegExp(`^run ${dir.id}: 5 reports, learner steps 1-1\n`))
    assert.match(summary.stdout, /│ sft\/loss +│ 2 +│ 1 +│ sft +│ 1-2 +│ 2 +│/)
    assert.match(summary.stdout, /│ rollout\/success\/calc │ 2 +│ 1 +│ learner │ 1-1 +│ 0\.75 +│/)
  })

  it('triad metrics --tensorboard writes the event files once; bad usage exits 2, a path that is no run 1', async () => {
    const dir = await runWithMetrics()
    const tb = await runTriad(['metrics', dir.path, '--tensorboard'])
    assert.equal(tb.code, 0, tb.stderr)
    const files = eventFiles(dir.tensorboardDir)
    assert.deepEqual(
      files.map((f) => f.slice(0, f.lastIndexOf('/'))),
      ['learner/0', 'rollout/r'],
    )
    assert.deepEqual(
      readEventFile(join(dir.tensorboardDir, files[1]!))
        .slice(1)
        .map((e) => [e.step, e.scalars]),
      [[1, { 'rollout/success/calc': 0.75 }]],
    )
    const again = await runTriad(['metrics', dir.path, '--tensorboard'])
    assert.equal(again.code, 1)
    assert.equal(
      again.stderr,
      `triad: ${dir.tensorboardDir} holds event files already; triad never overwrites a run's files (delete it to write them again)\n`,
    )
    const both = await runTriad(['metrics', dir.path, '--csv', '--json'])
    assert.equal(both.code, 2)
    assert.equal(both.stderr, 'triad: --csv and --json exclude each other: pick one output\n')
    const none = await runTriad(['metrics', join(dir.path, 'nope')])
    assert.equal(none.code, 2)
    assert.equal(
      none.stderr,
      `triad: ${join(dir.path, 'nope')} is not a triad run directory (it does not exist)\n`,
    )
  })
})
