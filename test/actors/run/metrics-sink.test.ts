import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  type MetricsLine,
  metricsWildcard,
  startMetricsSink,
  type Transport,
} from '../../../actors/index.ts'
import { parseMetricsLines } from '../../../actors/testing.ts'
import { MetricsReport, Subjects } from '../../../protocols/index.ts'
import { eventFiles, readEventFile } from '../../support/tfevents-reader.ts'

const report = (role: string, step: number, values: Record<string, number>): MetricsLine => ({
  role,
  id: '0',
  step,
  time: 1_000 + step,
  values,
})

/** Waits until `count` lines were written, with a deadline. */
function written(count: number, timeoutMs = 5_000) {
  let n = 0
  let done: () => void = () => {}
  const promise = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`only ${n} of ${count} lines written within ${timeoutMs} ms`)),
      timeoutMs,
    )
    done = () => {
      clearTimeout(timer)
      resolve()
    }
  })
  return {
    promise,
    onWrite: () => {
      if (++n === count) done()
    },
  }
}

async function sinkContract(transport: Transport, run: string) {
  const folder = mkdtempSync(join(tmpdir(), 'triad-sink-'))
  const file = join(folder, 'metrics.jsonl')
  writeFileSync(file, '{"kept":"earlier line"}\n')
  const wait = written(3)
  const invalid: string[] = []
  const sink = startMetricsSink(transport, {
    run,
    file,
    onWrite: wait.onWrite,
    onInvalid: (_e, s) => invalid.push(s),
    tensorboardDir: join(folder, 'tensorboard'),
  })
  if (transport.kind === 'nats') await transport.flush()
  const sent = [
    report('learner', 1, { 'learner/loss': 0.25 }),
    report('rollout', 1, { 'rollout/success/calc': 0.5 }),
    report('learner', 2, { 'learner/loss': 0.125 }),
  ]
  transport.publish(Subjects.metrics(run, 'learner'), MetricsReport.make(sent[0]!))
  transport.publish(Subjects.metrics(run, 'rollout'), MetricsReport.make(sent[1]!))
  transport.publish(
    Subjects.metrics('other-run', 'learner'),
    MetricsReport.make(report('learner', 9, { x: 1 })),
  )
  transport.publish(Subjects.metrics(run, 'learner'), {
    v: '1.0',
    type: 'metrics.report',
    payload: { role: 'learner' },
  })
  transport.publish(Subjects.metrics(run, 'learner'), MetricsReport.make(sent[2]!))
  await wait.promise
  await sink.stop()
  const text = readFileSync(file, 'utf8')
  assert.ok(text.startsWith('{"kept":"earlier line"}\n'), 'existing content is kept')
  const parsed = parseMetricsLines(text)
  assert.deepEqual(parsed.lines, sent)
  assert.deepEqual(parsed.bad, [1])
  assert.deepEqual(sink.stats(), { written: 3, invalid: 1 })
  assert.deepEqual(invalid, [Subjects.metrics(run, 'learner')])
  // The same lines as TensorBoard event files, one folder per reporter, the last step written at stop.
  const tb = join(folder, 'tensorboard')
  const files = eventFiles(tb)
  assert.deepEqual(
    files.map((f) => f.slice(0, f.lastIndexOf('/'))),
    ['learner/0', 'rollout/0'],
  )
  const points = (f: string) =>
    readEventFile(join(tb, f))
      .slice(1)
      .map((e) => [e.step, e.scalars])
  assert.deepEqual(points(files[0]!), [
    [1, { 'learner/loss': 0.25 }],
    [2, { 'learner/loss': 0.125 }],
  ])
  assert.deepEqual(points(files[1]!), [[1, { 'rollout/success/calc': 0.5 }]])
}

describe('actors/run/metrics-sink', () => {
  it('metricsWildcard - is triad.<run>.metrics.> and refuses a bad run id', () => {
    assert.equal(metricsWildcard('r-1'), 'triad.r-1.metrics.>')
    assert.throws(() => metricsWildcard('a.b'), /invalid run id/)
  })

  it('startMetricsSink - appends every report of the run (in process), counts bad ones', async () => {
    const t = new InProcessTransport()
    await sinkContract(t, 'sink-test')
    await t.close()
  })

  it('startMetricsSink - appends every report of the run over NATS', async () => {
    const t = await connectNats({
      servers: 'nats://127.0.0.1:4222',
      run: 'sink',
      role: 'test',
      id: String(process.pid),
    })
    try {
      await sinkContract(t, `sink-${process.pid}`)
    } finally {
      await t.close()
    }
  })
})
