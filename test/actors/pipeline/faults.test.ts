import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  type NatsServer,
  type NatsTransport,
  ProcessSupervisor,
  type SupervisedProcess,
  startNatsServer,
  startNodeProcesses,
  streamManager,
  trajectoryStreamName,
} from '../../../actors/index.ts'
import { MessageRegistry, MetricsReport } from '../../../protocols/index.ts'
import { auditGroups } from '../../support/group-audit.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

/**
 * Fault tests of the asynchronous pipeline with real processes: a learner process and a rollout
 * process (environments, engine, agent loops) under a process supervisor, on a nats-server with
 * JetStream on a store directory this test owns. Processes are killed with SIGKILL; the NATS server
 * is killed and restarted on the same port and store.
 */
describe('actors/pipeline - faults with real processes', () => {
  let nats: NatsServer
  let watcher: NatsTransport
  let supervisor: ProcessSupervisor
  let learner: SupervisedProcess
  let rollout: SupervisedProcess
  const runDir = mkdtempSync(join(tmpdir(), 'triad-faults-'))
  const run = 'faults'
  let step = 0
  const stepWaiters: { at: number; resolve: () => void }[] = []
  /** Resolves when the learner reports a step >= `at` (an event from its metrics), or fails at the deadline. */
  const untilStep = (at: number, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      if (step >= at) return resolve()
      const timer = setTimeout(
        () => reject(new Error(`learner did not reach step ${at} within ${timeoutMs} ms (at ${step})`)),
        timeoutMs,
      )
      stepWaiters.push({
        at,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      })
    })

  before(async () => {
    nats = await startNatsServer({ storeDir: join(runDir, 'nats') })
    const config = tinyNodeConfig(run, runDir, {
      seed: 3,
      model: { width: 32 },
      tasks: [{ name: 'calc' }],
      rl: { lr: 1e-4 },
      pipeline: { stalenessBound: 1_000, bufferGroups: 4, concurrency: 4, maxNewTokens: 16 },
      budget: { maxSteps: 100_000 },
    })
    const configFile = join(runDir, 'node-config.json')
    writeFileSync(configFile, JSON.stringify(config))
    watcher = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    watcher.subscribe(`triad.${run}.metrics.learner`, {
      accepts: new MessageRegistry([MetricsReport]),
      handler: (m) => {
        const line = m.payload as { step: number; axis?: string }
        // SFT lines count SFT steps (their axis), not learner steps
        if (line.axis === undefined) step = Math.max(step, line.step)
        for (const w of stepWaiters.splice(0))
          if (step >= w.at) w.resolve()
          else stepWaiters.push(w)
      },
    })
    supervisor = new ProcessSupervisor({
      maxRestarts: 10,
      withinMs: 60_000,
      backoff: { initialMs: 100, maxMs: 1_000, factor: 2 },
      onLimit: 'stop',
    })
    ;({ learner, rollout } = startNodeProcesses(supervisor, ['learner', 'rollout'], {
      configFile,
      nats: nats.url,
      logsDir: runDir,
    }) as Record<'learner' | 'rollout', SupervisedProcess>)
    await untilStep(2, 120_000)
  })

  after(async () => {
    await supervisor?.stop()
    await watcher?.close()
    await nats?.stop()
  })

  it('faults - the rollout process killed mid-run is restarted and the learner keeps stepping', async () => {
    const before = step
    process.kill(rollout.pid()!, 'SIGKILL')
    await untilStep(before + 3, 120_000)
    assert.equal(rollout.restarts(), 1)
  })

  it('faults - the NATS server killed and restarted mid-run: the run goes on', async () => {
    const before = step
    await nats.kill()
    await nats.restart()
    await untilStep(before + 3, 120_000)
  })

  it('faults - the learner killed resumes from its checkpoint; no acknowledged group is used twice and none is lost', async () => {
    const before = step
    process.kill(learner.pid()!, 'SIGKILL')
    await untilStep(before + 3, 120_000)
    assert.equal(learner.restarts(), 1)
    await supervisor.stop()

    // Every group ever published is in exactly one place: acknowledged after training on it (in a
    // checkpoint), acknowledged as dropped, or still in the stream waiting for a learner. A group
    // delivered again after it was used (its ack lost in the NATS restart) was skipped.
    const { used } = await auditGroups(
      `${runDir}/checkpoints`,
      await streamManager(watcher.nc),
      trajectoryStreamName(run),
    )
    // The learner is stopped: what is left in the stream was never trained on, or was trained on
    // and its ack lost (the next learner skips it as a duplicate).
    assert.ok(used.length >= step - 1, `${used.length} groups used for ${step} steps`)
  })
})
