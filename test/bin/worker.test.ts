import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  CHILD_STOP_WATCHDOG_MS,
  connectNats,
  NODE_ENGINE_DRAIN_MS,
  type ProcessEvent,
  ProcessSupervisor,
  policyReplies,
  remoteActor,
  startNatsServer,
  streamManager,
  trajectoryStreamName,
} from '../../actors/index.ts'
import { STOP_GRACE_MS } from '../../actors/testing.ts'
import { PolicyGenerate, Subjects } from '../../protocols/index.ts'
import { collectMetricsReports, type Report } from '../support/metrics-reports.ts'
import { suiteNatsServer } from '../support/suite-nats-server.ts'
import { tinyNodeConfig, tinyTriad } from '../support/tiny-node-config.ts'
import { startTriad, type TriadProcess } from '../support/triad-process.ts'
import { within } from '../support/within.ts'

/**
 * How long a rollout worker may take from SIGTERM to its exit: well inside the 10 s its supervisor
 * grants before SIGKILL (`ProcessSupervisor.stop`).
 */
const ROLLOUT_STOP_MS = 5_000
/** The same for the learner, whose step in progress finishes first (a step is never cut short). */
const LEARNER_STOP_MS = 8_000

/** Sends SIGTERM and waits for the exit, at most `ms`. */
function terminate(p: TriadProcess, role: string, ms: number) {
  p.child.kill('SIGTERM')
  return within(p.exited, ms, () => `the ${role} worker's exit; stderr:\n${p.stderr()}`)
}

describe('bin/worker - SIGTERM', () => {
  const nats = suiteNatsServer('triad-worker-js-')

  it('worker - a rollout worker stopped in the middle of rollouts exits 0 within 5 s with every group it published in the stream; the learner then exits 0 within 8 s', async () => {
    const run = `wsig${process.pid}`
    const runDir = mkdtempSync(join(tmpdir(), 'triad-worker-run-'))
    // Fresh and stale engines and a step judge in the rollout process: the services whose requests
    // the agent loops wait on when the node stops.
    const config = tinyNodeConfig(run, runDir, {
      budget: { maxSteps: 100_000 },
      // Room for calc's prompt and a few generated tokens per turn.
      model: { contextLength: 384 },
      pipeline: { staleEngines: 1, rho: 0.5, concurrency: 4 },
      triad: tinyTriad(false, true),
    })
    const configFile = join(runDir, 'node-config.json')
    writeFileSync(configFile, JSON.stringify(config))
    const watch = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    let onReport = () => {}
    const { reports, stop: stopReports } = collectMetricsReports(watch, run, () => onReport())
    /** Resolves once some report satisfies `check`, at most `ms`. */
    const reported = (check: (r: Report) => boolean, ms: number, what: string) =>
      within(
        new Promise<void>((resolve) => {
          onReport = () => reports.some(check) && resolve()
          onReport()
        }),
        ms,
        () => `${what}; last reports: ${JSON.stringify(reports.slice(-3))}`,
      )
    const worker = (role: string) =>
      startTriad(['worker', '--role', role, '--config', configFile, '--nats', nats.url, '--id', role])
    const learner = worker('learner')
    const rollout = worker('rollout')
    try {
      // In the middle of rollouts: the learner has stepped on published groups (new weights are
      // going out) and the rollout side has finished judged episodes and keeps generating.
      await reported((r) => r.role === 'learner' && r.step >= 1, 180_000, 'a learner step')
      await reported(
        (r) =>
          r.role === 'rollout' &&
          (r.values['rollout/generated_tokens'] ?? 0) >= 1 &&
          (r.values['reward/judge_calls'] ?? 0) >= 1,
        60_000,
        'a rollout report with judged episodes',
      )
      assert.deepEqual(
        await terminate(rollout, 'rollout', ROLLOUT_STOP_MS),
        { code: 0, signal: null },
        rollout.stderr(),
      )
      // stderr is the role's structured log: pino lines with the role's level, role and message
      assert.match(
        rollout.stderr(),
        /^\{"level":30,"time":\d+,"pid":\d+,"hostname":"[^"]+","role":"rollout","id":"[^"]+","run":"[^"]+","msg":"stopped in \d+ ms \(agent loops ended in \d+ ms\)"\}$/m,
      )
      assert.doesNotMatch(rollout.stderr(), /did not (stop|end) within/)
      // The process's own stop, timed by phase (a slow exit says where its time went).
      assert.match(
        rollout.stderr(),
        /"msg":"triad worker: rollout stopped \(role \d+ ms, actors \d+ ms, NATS \d+ ms\)"/,
      )
      // Nothing published is lost: the last report (sent while stopping) counts exactly the groups
      // the stream received.
      await watch.flush()
      const last = reports.filter((r) => r.role === 'rollout').at(-1)!
      const stream = await (await streamManager(watch.nc)).streams.info(trajectoryStreamName(run))
      assert.equal(last.values['rollout/groups'], stream.state.last_seq)

      // The learner, waiting for groups that no longer come, stops as promptly.
      assert.deepEqual(
        await terminate(learner, 'learner', LEARNER_STOP_MS),
        { code: 0, signal: null },
        learner.stderr(),
      )
    } finally {
      await stopReports()
      await watch.close()
      await rollout.kill('SIGKILL')
      await learner.kill('SIGKILL')
      rmSync(runDir, { recursive: true, force: true })
    }
  })
})

describe('bin/worker - a stop that hangs', () => {
  it('worker - a role whose stop hangs exits 1 with a line that says so, before the supervisor would SIGKILL it', async () => {
    assert.ok(CHILD_STOP_WATCHDOG_MS < STOP_GRACE_MS)
    const nats = await startNatsServer({ monitorPort: false })
    const dir = mkdtempSync(join(tmpdir(), 'triad-worker-stuck-'))
    const logFile = join(dir, 'stuck.log')
    const script = fileURLToPath(new URL('../support/stuck-worker.ts', import.meta.url))
    const supervisor = new ProcessSupervisor()
    const events: ProcessEvent[] = []
    supervisor.on((e) => events.push(e))
    try {
      const child = supervisor.start({
        name: 'stuck',
        command: process.execPath,
        args: ['--import', 'tsx', script, nats.url, 'stuck'],
        logFile,
      })
      await child.ready()
      const pid = child.pid()!
      // The default grace: the one `triad run` stops its learner and rollout with.
      await supervisor.stop()
      assert.deepEqual(
        events.filter((e) => e.type === 'exited'),
        [{ type: 'exited', name: 'stuck', pid, code: 1, signal: null, next: 'stop' }],
        readFileSync(logFile, 'utf8'),
      )
      assert.match(
        readFileSync(logFile, 'utf8'),
        new RegExp(
          `^\\{"level":60,.*"role":"stuck",.*"msg":"triad worker: stuck did not stop within ${CHILD_STOP_WATCHDOG_MS / 1000} s; exiting"\\}$`,
          'm',
        ),
      )
    } finally {
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('bin/worker - a stop during the start', () => {
  it('worker - SIGTERM while the role starts is a clean stop once it has started (exit 0), not a death by the signal', async () => {
    const nats = await startNatsServer({ monitorPort: false })
    const script = fileURLToPath(new URL('../support/slow-start-worker.ts', import.meta.url))
    const child = spawn(process.execPath, ['--import', 'tsx', script, nats.url, 'slow'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    const starting = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8')
        if (stdout.includes('{"event":"starting"}')) resolve()
      }),
    )
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8')
    })
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    )
    try {
      await within(starting, 60_000, () => `the role's start; stderr:\n${stderr}`)
      child.kill('SIGTERM') // mid-start: the role has not returned yet
      child.kill('SIGUSR2') // now the start ends
      const exit = await within(exited, CHILD_STOP_WATCHDOG_MS + 10_000, () => `the exit; stderr:\n${stderr}`)
      assert.deepEqual(exit, { code: 0, signal: null }, stderr)
      assert.match(stdout, /"event":"ready"/)
    } finally {
      child.kill('SIGKILL')
      await nats.stop()
    }
  })
})

describe('bin/worker - policy role', () => {
  it('worker - a policy worker stopped in the middle of long generations serves them only briefly (NODE_ENGINE_DRAIN_MS) and exits 0', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'triad-worker-policy-'))
    const nats = await startNatsServer({ monitorPort: false, storeDir })
    const run = `wpol${process.pid}`
    const client = await connectNats({ servers: nats.url, run, role: 'test', id: '0' })
    const engine = remoteActor(client, Subjects.policyFresh(run), { replies: policyReplies })
    const ask = (max: number) =>
      engine.ask(PolicyGenerate.make({ prompt: Int32Array.of(1, 2, 3), max_new_tokens: max }), 60_000)
    const worker = startTriad(['worker', '--role', 'policy', '--nats', nats.url, '--run', run, '--id', 'p'], {
      TRIAD_POLICY_CONFIG: JSON.stringify({
        layers: 2,
        width: 128,
        heads: 4,
        contextLength: 1024,
        vocabSize: 300,
      }),
    })
    try {
      await worker.waitForLine((l) => l.event === 'ready', 60_000)
      // 32 generations of 1,000 tokens: far more work than the drain allows on the CPU backends.
      let completed = 0
      for (let i = 0; i < 32; i++)
        ask(1_000).then(
          () => completed++,
          () => undefined,
        )
      // Requests are taken in order: once a one-token request behind them is answered, they all run.
      await ask(1)
      const stopped = Date.now()
      assert.deepEqual(
        await terminate(worker, 'policy', NODE_ENGINE_DRAIN_MS + 3_000),
        { code: 0, signal: null },
        worker.stderr(),
      )
      assert.doesNotMatch(worker.stderr(), /did not stop/)
      assert.equal(completed, 0, `generations that finished within ${Date.now() - stopped} ms of SIGTERM`)
    } finally {
      await worker.kill('SIGKILL')
      await client.close()
      await nats.stop()
      rmSync(storeDir, { recursive: true, force: true })
    }
  })
})
