import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  appendRunLog,
  connectNats,
  type NatsServer,
  type NatsTransport,
  recordRunTransport,
  runDirPaths,
  type Served,
  startNatsServer,
  writeEvalResult,
} from '../../actors/index.ts'
import { formatStatus, type StatusReport } from '../../bin/commands/status.ts'
import { MessageRegistry, MetricsReport } from '../../protocols/index.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin/status', () => {
  let nats: NatsServer
  let clients: NatsTransport[] = []
  let served: Served[] = []
  const runsDir = mkdtempSync(join(tmpdir(), 'triad-status-runs-'))
  const run = 'stat-20261130-010000'

  before(async () => {
    // A private server on a free port, as triad run starts one; a service of the run and one of another.
    nats = await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'triad-status-nats-')) })
    const dir = runDirPaths(join(runsDir, run))
    mkdirSync(dir.path)
    await recordRunTransport(dir, { transport: 'nats', url: nats.url, monitor: nats.monitorUrl })
    for (const [r, role] of [
      [run, 'rollout'],
      ['other', 'rollout'],
    ] as const) {
      const t = await connectNats({ servers: nats.url, run: r, role, id: '0' })
      clients.push(t)
      served.push(
        await t.serve(`triad.${r}.statustest.ping`, {
          accepts: new MessageRegistry([MetricsReport]),
          handler: (m) => m,
          service: { name: 'triad-statustest', description: 'status test', metadata: { run: r } },
        }),
      )
    }
  })

  after(async () => {
    await Promise.all(served.map((s) => s.stop()))
    await Promise.all(clients.map((c) => c.close()))
    await nats?.stop()
    served = []
    clients = []
  })

  it("triad status --run - the run's server from its run directory, and only the run's services, connections and subjects", async () => {
    const r = await runTriad(['status', '--run', run, '--runs-dir', runsDir, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout) as StatusReport
    assert.equal(report.nats, nats.url)
    assert.equal(report.source, `recorded by triad run in ${join(runsDir, run, 'logs', 'run.jsonl')}`)
    assert.equal(report.run, run)
    assert.deepEqual(
      report.services.map((s) => [s.name, s.metadata.run]),
      [['triad-statustest', run]],
    )
    // the monitoring URL came from the run directory too: connections and subjects of this run only
    assert.deepEqual(report.server?.connectionsByRole, { rollout: 1 })
    assert.deepEqual(Object.keys(report.server?.subscriptionsBySubject ?? {}), [
      `triad.${run}.statustest.ping`,
    ])
  })

  it('triad status - without --run every run, with a run column', async () => {
    const r = await runTriad(['status', '--nats', nats.url])
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.split('\n')
    assert.equal(lines[0], `NATS ${nats.url}`)
    assert.match(lines[2]!, /^service\s+run\s+id\s+subject\s+queue\s+handled\s+errors\s+invalid\s+restarts$/)
    // sorted by service name, then run
    assert.deepEqual(
      lines.slice(3, 5).map((l) => l.split(/\s+/).slice(0, 2)),
      [
        ['triad-statustest', 'other'],
        ['triad-statustest', run],
      ],
    )
  })
})

describe('bin/status - formatStatus', () => {
  it('formatStatus - no service: where it asked, and how to find the server of a triad run', () => {
    const text = formatStatus({ nats: 'nats://127.0.0.1:4222', source: 'the default URL', services: [] })
    assert.deepEqual(text.split('\n'), [
      'NATS nats://127.0.0.1:4222 (the default URL)',
      '',
      'no triad services answer at nats://127.0.0.1:4222',
      'triad run without --nats serves a run on its own nats-server on a free port: pass --run RUN to ask the server',
      'recorded in runs/RUN/logs/run.jsonl (with --runs-dir for another runs folder), or --nats with the URL triad run printed',
    ])
    assert.deepEqual(
      formatStatus({ nats: 'nats://h:1', source: '--nats', run: 'r1', services: [] }).split('\n'),
      ['NATS nats://h:1, run r1', '', 'no service of run r1 answers at nats://h:1: has the run ended?'],
    )
  })
})

describe('bin/status - a run that ended', () => {
  it('triad status --run and triad monitor --run - a run whose run directory holds its stop: one line of how it ended, exit 0, without NATS; an unknown run keeps its error', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-status-ended-'))
    const dir = runDirPaths(join(runsDir, 'done-20261204-120000'))
    mkdirSync(dir.evalDir, { recursive: true })
    // What triad run writes: start, its embedded server's URL (gone now), the final evaluation, stop.
    await appendRunLog(dir, 'run', { event: 'start', time: Date.UTC(2026, 11, 4, 12), recipe: 'q.ts' })
    await recordRunTransport(dir, { transport: 'nats', url: 'nats://127.0.0.1:1' })
    const evalFile = await writeEvalResult(dir, 'final-1764850000000', {
      step: 40,
      rows: [{ checkpoint: 'step-40', task: 'calc' }],
    })
    await appendRunLog(dir, 'run', {
      event: 'stop',
      time: Date.UTC(2026, 11, 4, 12, 30),
      reason: 'steps',
      steps: 40,
      restarts: { learner: 0, rollout: 1 },
      metricsLines: 400,
      evalFile,
    })
    const line = `run ${dir.id} ended at step 40, 2026-12-04T12:30:00.000Z, exit 0 (step budget), final evaluation in eval/final-1764850000000.json`
    for (const command of [['status'], ['monitor'], ['monitor', '--once']]) {
      const r = await runTriad([...command, '--run', dir.id, '--runs-dir', runsDir])
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, line, ''], command.join(' '))
    }
    const json = await runTriad(['status', '--run', dir.id, '--runs-dir', runsDir, '--json'])
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual(JSON.parse(json.stdout), {
      run: dir.id,
      dir: dir.path,
      ended: true,
      step: 40,
      time: Date.UTC(2026, 11, 4, 12, 30),
      reason: 'steps',
      exitCode: 0,
      evalFile,
      restarts: { learner: 0, rollout: 1 },
    })
    const unknown = await runTriad(['status', '--run', 'nope-20261204-120000', '--runs-dir', runsDir])
    assert.equal(unknown.code, 2, 'no such run directory is a bad argument')
    assert.equal(
      unknown.stderr,
      `triad: cannot find the NATS server of run nope-20261204-120000: there is no run directory ${join(runsDir, 'nope-20261204-120000')}; pass --runs-dir with the folder that holds the run directory, or --nats with the URL triad run printed\n`,
    )
  })
})
