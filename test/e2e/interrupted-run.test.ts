import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, afterEach, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  connectNats,
  readLatestCheckpoint,
  startNatsServer,
  streamManager,
  trajectoryStreamName,
} from '../../actors/index.ts'
import { LEARNER_LOCK_FILE } from '../../actors/testing.ts'
import { auditGroups } from '../support/group-audit.ts'
import { learnerStep } from '../support/learner-step.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { descendants, isGone, killSurvivors, type ProcStat, waitUntil } from '../support/process-tree.ts'
import { RUN_STARTED, startTriad, type TriadProcess } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
const env = { PATH: pathWithNatsServer() }

/** recipes/tiny.ts renamed `stop-tiny` with the budget `budget` (a resume may change only it), written into `dir`. */
function tinyRecipe(dir: string, budget: string, file: string): string {
  const path = join(dir, file)
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'stop-tiny'")
    .replace(/budget: \{[^}]*\}/, `budget: ${budget}`)
  assert.ok(source.includes(`budget: ${budget}`))
  writeFileSync(path, source)
  return path
}

/** The pids `triad run` printed for its learner and rollout processes (its latest start). */
function rolePids(run: TriadProcess): { learner: number; rollout: number } {
  const line = run.stdout.findLast((l) => /^learner pid \d+, rollout pid \d+/.test(l))
  assert.ok(line, run.stdout.join('\n'))
  const [, learner, rollout] = /^learner pid (\d+), rollout pid (\d+)/.exec(line)!
  return { learner: Number(learner), rollout: Number(rollout) }
}

/** What the test's output shows of a leg when a wait fails. */
const shown = (run: TriadProcess) => () => `stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`

/**
 * The stop path of a real run (`triad run` with its embedded nats-server and its learner and
 * rollout processes), interrupted at several points and resumed each time: Ctrl-C as a terminal
 * sends it (SIGINT to the whole process group), SIGTERM to `triad run` alone as a supervisor sends
 * it (as soon as a new checkpoint is named), and `kill -9` of `triad run` while its orphaned
 * learner still runs (the resume is refused, naming it). The last resume has its embedded
 * nats-server killed with SIGKILL and runs to its step budget. Then the audit: every group
 * published on the run's stream is used exactly once, dropped with a reason, or still there.
 */
describe('e2e - triad run interrupted and resumed: no group trained twice, none lost', () => {
  const tmpDir = mkdtempSync(join(tmpdir(), 'triad-stop-'))
  const open = tinyRecipe(tmpDir, '{ maxSteps: 100000, maxMinutes: 10 }', 'stop-tiny.ts')
  let dir = ''
  const survivors: ProcStat[] = []
  const started: TriadProcess[] = []
  // A leg that failed leaves nothing running for the next one.
  afterEach(async () => {
    for (const run of started.splice(0)) await run.kill('SIGKILL')
  })
  after(() => killSurvivors(survivors))

  /** Starts `triad run` (a new run, or a resume of `dir`) in a process group of its own. */
  const start = (recipe: string) => {
    const args = dir ? ['run', recipe, '--resume', dir] : ['run', recipe, '--runs-dir', join(tmpDir, 'runs')]
    const run = startTriad(args, env, { ownGroup: true })
    started.push(run)
    return run
  }

  /** Waits for the run's stop after a signal: exit `code`, each role stopped by itself, nothing restarted. */
  async function stoppedCleanly(run: TriadProcess, code: number, children: ProcStat[]) {
    const { learner, rollout } = rolePids(run)
    const exit = await run.exited
    assert.equal(exit.code, code, shown(run)())
    const out = run.stdout.join('\n')
    assert.match(out, /stopping \(interrupted\)/)
    assert.match(out, new RegExp(`^learner \\(pid ${learner}\\) stopped$`, 'm'))
    assert.match(out, new RegExp(`^rollout \\(pid ${rollout}\\) stopped$`, 'm'))
    assert.doesNotMatch(out, /restarting/)
    assert.ok(children.every(isGone), 'every child ended with the run')
    assert.equal(existsSync(join(dir, 'run.lock')), false)
    assert.equal(existsSync(join(dir, LEARNER_LOCK_FILE)), false)
  }

  it('Ctrl-C (SIGINT to the process group) after the first RL step: only triad run gets it, stops the roles, then the server, and exits 130', async () => {
    const run = start(open)
    dir = (await run.waitForText(RUN_STARTED, 60_000))[2]!
    await waitUntil(() => learnerStep(dir) >= 1, 240_000, shown(run))
    const children = descendants(run.child.pid!)
    survivors.push(...children)
    assert.ok(
      children.some((p) => p.comm === 'nats-server'),
      children.map((p) => p.comm).join(', '),
    )
    // Each child leads a process group of its own: the group's SIGINT reaches triad run alone.
    // (tsx's esbuild service is the loader's own helper, not a child triad starts.)
    const direct = children.filter((c) => c.ppid === run.child.pid && c.comm !== 'esbuild')
    assert.ok(direct.length >= 3, direct.map((p) => p.comm).join(', '))
    for (const p of direct)
      assert.notEqual(p.pgrp, run.child.pid, `${p.comm} ${p.pid} is in triad run's group`)
    process.kill(-run.child.pid!, 'SIGINT')
    await stoppedCleanly(run, 130, children)
    // The server stopped after the roles: the learner's stop acknowledged what it checkpointed.
    const out = run.stdout.join('\n')
    assert.doesNotMatch(out, /nats-server \(pid \d+\) exited/)
  })

  it('SIGTERM to triad run as soon as the resumed learner names a new checkpoint: exits 143 after the same clean stop', async () => {
    const before = readLatestCheckpoint(join(dir, 'checkpoints'))?.version ?? 0
    const run = start(open)
    await run.waitForText(/^run \S+ resumed in /, 60_000)
    await waitUntil(
      () => (readLatestCheckpoint(join(dir, 'checkpoints'))?.version ?? 0) > before,
      240_000,
      shown(run),
    )
    const children = descendants(run.child.pid!)
    survivors.push(...children)
    run.child.kill('SIGTERM')
    await stoppedCleanly(run, 143, children)
  })

  it('kill -9 of triad run: while its orphaned learner still runs, a resume is refused naming the learner pid', async () => {
    const at = learnerStep(dir)
    const run = start(open)
    await run.waitForText(/^run \S+ resumed in /, 60_000)
    await waitUntil(() => learnerStep(dir) > at, 240_000, shown(run))
    const { learner } = rolePids(run)
    const children = descendants(run.child.pid!)
    survivors.push(...children)
    // Stopped, the learner cannot act on the SIGTERM its parent's death sends it: it stays alive
    // (orphaned) for as long as the test needs, as one busy finishing its stop would.
    process.kill(learner, 'SIGSTOP')
    run.child.kill('SIGKILL')
    await run.exited
    const refused = start(open)
    assert.equal((await refused.exited).code, 1, shown(refused)())
    assert.match(
      refused.stderr(),
      new RegExp(`^triad: ${dir} is in use by the learner of an earlier triad run \\(pid ${learner}, since `),
    )
    process.kill(learner, 'SIGCONT')
    await waitUntil(
      () => children.every(isGone),
      30_000,
      () => 'the orphaned learner did not stop',
    )
  })

  it('the last resume, its nats-server killed with SIGKILL mid-run: the server comes back on its port and store, said on screen and in logs/run.jsonl, and the run ends at its step budget', async () => {
    const from = readLatestCheckpoint(join(dir, 'checkpoints'))?.version ?? 0
    // Steps after the last checkpoint were reported, then lost with the learner: count from there.
    const at = Math.max(from, learnerStep(dir))
    const budget = at + 3
    const run = start(tinyRecipe(tmpDir, `{ maxSteps: ${budget}, maxMinutes: 10 }`, 'stop-tiny-end.ts'))
    const port = (await run.waitForText(/^embedded nats-server at nats:\/\/127\.0\.0\.1:(\d+)/, 60_000))[1]
    await waitUntil(() => learnerStep(dir) > at, 240_000, shown(run))
    const children = descendants(run.child.pid!)
    survivors.push(...children)
    const server = children.find((p) => p.comm === 'nats-server')!
    process.kill(server.pid, 'SIGKILL')
    const exit = await run.exited
    assert.equal(exit.code, 0, shown(run)())
    const out = run.stdout.join('\n')
    assert.match(
      out,
      new RegExp(
        `^nats-server \\(pid ${server.pid}\\) exited \\(SIGKILL\\); restarting in 200 ms on port ${port}$`,
        'm',
      ),
    )
    assert.match(
      out,
      new RegExp(`^nats-server restarted \\(pid \\d+\\) on port ${port} with its store$`, 'm'),
    )
    assert.match(out, new RegExp(`stopping \\(${budget} steps done\\)`))
    const events = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string })
      .map((e) => e.event)
    assert.ok(
      events.includes('nats-server.exited') && events.includes('nats-server.restarted'),
      events.join(', '),
    )
    assert.equal(readLatestCheckpoint(join(dir, 'checkpoints'))?.version, budget)
  })

  it('the audit: every group published on the run stream was used exactly once, dropped with a reason, or is still in the stream', async () => {
    const server = await startNatsServer({ storeDir: join(dir, 'nats'), monitorPort: false })
    const t = await connectNats({ servers: server.url, run: 'audit', role: 'test', id: '0' })
    try {
      const run = basename(dir)
      const audit = await auditGroups(
        join(dir, 'checkpoints'),
        await streamManager(t.nc),
        trajectoryStreamName(run),
      )
      assert.ok(audit.published > 0)
      assert.ok(audit.used.length >= 1, JSON.stringify(audit))
    } finally {
      await t.close()
      await server.stop()
    }
  })
})
