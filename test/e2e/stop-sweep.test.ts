import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { connectNats, startNatsServer, streamManager, trajectoryStreamName } from '../../actors/index.ts'
import { LEARNER_LOCK_FILE, RUN_LOCK_FILE } from '../../actors/testing.ts'
import { createRng } from '../../gpu/index.ts'
import { auditGroups } from '../support/group-audit.ts'
import { learnerStep } from '../support/learner-step.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { descendants, isGone, killSurvivors, type ProcStat, waitUntil } from '../support/process-tree.ts'
import { RUN_STARTED, startTriad, type TriadProcess } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
const env = { PATH: pathWithNatsServer() }

/**
 * The sweep's seed. Its points: the cold start first (only the first attempt has one), then
 * `MIDDLE_POINTS` moments drawn from RL, a periodic evaluation and a checkpoint write, then the
 * final evaluation; each moment is followed by a seeded delay and a seeded signal (SIGINT to the
 * process group, as Ctrl-C sends it, or SIGTERM to `triad run`, as a supervisor does). Five
 * interrupted attempts and the last resume keep the file well under 150 s on two loaded cores
 * (the issue suggests 20 points: each costs a start of `triad run`, its nats-server and two roles).
 */
const SEED = 34
const MIDDLE_POINTS = 3

type Moment = 'cold start' | 'RL step' | 'periodic evaluation' | 'checkpoint write' | 'final evaluation'

/** recipes/tiny.ts renamed `sweep-tiny`, 10 steps (periodic evaluations at 2, 4, 6, 8), no time budget to run out under load. */
function tinyRecipe(dir: string): string {
  const path = join(dir, 'sweep-tiny.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'sweep-tiny'")
    .replace(/budget: \{[^}]*\}/, 'budget: { maxSteps: 10, maxMinutes: 10 }')
  assert.match(source, /maxSteps: 10, maxMinutes: 10/)
  writeFileSync(path, source)
  return path
}

/** The events of `logs/run.jsonl`. */
function runEvents(dir: string): { event: string; reason?: string; signal?: string }[] {
  return readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
}

/** Resolves when a `step-N` folder appears in `checkpoints/` (a checkpoint write begins). */
function checkpointWrite(dir: string, timeoutMs: number): Promise<void> {
  const folder = join(dir, 'checkpoints')
  const before = new Set(existsSync(folder) ? readdirSync(folder) : [])
  return new Promise((resolve, reject) => {
    const watcher = watch(folder, (_, name) => {
      if (name && /^step-\d+$/.test(String(name)) && !before.has(String(name))) {
        done()
        resolve()
      }
    })
    const timer = setTimeout(() => {
      done()
      reject(new Error(`no checkpoint write within ${timeoutMs} ms`))
    }, timeoutMs)
    const done = () => {
      clearTimeout(timer)
      watcher.close()
    }
  })
}

const shown = (run: TriadProcess) => () => `stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`

/**
 * A stop at any moment is a clean stop: a tiny run interrupted at seeded moments over its whole
 * length (the cold start, RL, periodic evaluations, checkpoint writes, the final evaluation), each
 * attempt resumed by the next. Each interrupted attempt prints the "stopping" line, writes its
 * `stop` event (reason `signal`, the signal named) to `logs/run.jsonl`, releases `run.lock`, leaves
 * no process behind and exits 130 (SIGINT) or 143 (SIGTERM). The last resume finishes the run and
 * the group audit finds no group trained twice and none lost.
 */
describe('e2e - a seeded sweep of stops over a whole run: each a clean stop, then the audit', () => {
  const tmpDir = mkdtempSync(join(tmpdir(), 'triad-sweep-'))
  const recipe = tinyRecipe(tmpDir)
  const started: TriadProcess[] = []
  const survivors: ProcStat[] = []
  after(async () => {
    for (const run of started) await run.kill('SIGKILL')
    killSurvivors(survivors)
  })

  it(`seed ${SEED}: ${MIDDLE_POINTS + 2} interrupts, each resumed; the audit is clean`, async (t) => {
    const rng = createRng(SEED)
    const middle: Moment[] = ['RL step', 'periodic evaluation', 'checkpoint write']
    const points: Moment[] = [
      'cold start',
      ...Array.from({ length: MIDDLE_POINTS }, () => middle[rng.int(middle.length)]!),
      'final evaluation',
    ]
    let dir = ''
    let interrupted = 0
    for (const moment of points) {
      const signal = rng.int(2) === 0 ? 'SIGINT' : 'SIGTERM'
      // The final evaluation of the tiny run is short: the signal comes at once.
      const waitMs = moment === 'final evaluation' ? 0 : rng.int(1000)
      const args = dir
        ? ['run', recipe, '--resume', dir]
        : ['run', recipe, '--runs-dir', join(tmpDir, 'runs')]
      const run = startTriad(args, env, { ownGroup: true })
      started.push(run)
      if (!dir) dir = (await run.waitForText(RUN_STARTED, 60_000))[2]!
      else if ((await run.waitForText(/^run \S+ (resumed in|is finished)/, 60_000))[1] === 'is finished') {
        // An earlier attempt ran to the end (its moment never came): nothing is left to interrupt.
        t.diagnostic(`${moment}: the run had finished`)
        assert.equal((await run.exited).code, 0, shown(run)())
        continue
      }
      const at = learnerStep(dir)
      const reached = {
        'cold start': () => run.waitForText(/^learner pid \d+, rollout pid \d+/, 60_000),
        'RL step': () => waitUntil(() => learnerStep(dir) > at, 120_000, shown(run)),
        'periodic evaluation': () => run.waitForText(/^evaluating step-\d+ in the background/, 120_000),
        'checkpoint write': () => checkpointWrite(dir, 120_000),
        'final evaluation': () => run.waitForText(/^evaluating step-\d+: /, 180_000),
      }[moment]
      // A moment this attempt never reaches (the run finished first) ends the wait with the exit.
      const outcome = await Promise.race([
        reached().then(() => 'reached' as const),
        run.exited.then(() => 'exited' as const),
      ])
      if (outcome === 'exited') {
        t.diagnostic(`${moment}: the attempt finished before it (exit ${(await run.exited).code})`)
        assert.equal((await run.exited).code, 0, shown(run)())
        continue
      }
      await delay(waitMs)
      const children = descendants(run.child.pid!)
      survivors.push(...children)
      if (signal === 'SIGINT') process.kill(-run.child.pid!, 'SIGINT')
      else run.child.kill('SIGTERM')
      const exit = await run.exited
      if (exit.code === 0) {
        t.diagnostic(`${moment} + ${waitMs} ms: the run finished before ${signal} reached it`)
        continue
      }
      interrupted++
      t.diagnostic(`${moment} + ${waitMs} ms, ${signal}: exit ${exit.code}`)
      assert.equal(exit.code, signal === 'SIGINT' ? 130 : 143, shown(run)())
      // The stopping line: the signal's own, or the budget's then the signal's during the drain of
      // the periodic evaluations (which stops it and leaves them for the resume).
      const out = run.stdout.join('\n')
      assert.ok(
        /^stopping \(interrupted\)/m.test(out) ||
          (/^stopping \(\d+ steps done\)$/m.test(out) &&
            /^interrupted: the pending periodic evaluations are left for the resume$/m.test(out)),
        shown(run)(),
      )
      const last = runEvents(dir).at(-1)
      assert.equal(last?.event, 'stop', JSON.stringify(last))
      assert.equal(last?.reason, 'signal')
      assert.equal(last?.signal, signal)
      assert.equal(existsSync(join(dir, RUN_LOCK_FILE)), false, 'run.lock released')
      await waitUntil(
        () => children.every(isGone),
        15_000,
        () => `left running: ${children.filter((c) => !isGone(c)).map((c) => `${c.comm} ${c.pid}`)}`,
      )
      assert.equal(existsSync(join(dir, LEARNER_LOCK_FILE)), false)
    }
    assert.ok(interrupted >= 3, `only ${interrupted} attempts were interrupted`)
    // The last resume finishes the run: its steps and its final evaluation.
    const last = startTriad(['run', recipe, '--resume', dir], env)
    started.push(last)
    assert.equal((await last.exited).code, 0, shown(last)())
    assert.ok(readdirSync(join(dir, 'eval')).some((f) => f.startsWith('final-')))
    const server = await startNatsServer({ storeDir: join(dir, 'nats'), monitorPort: false })
    const c = await connectNats({ servers: server.url, run: 'audit', role: 'test', id: '0' })
    try {
      const audit = await auditGroups(
        join(dir, 'checkpoints'),
        await streamManager(c.nc),
        trajectoryStreamName(basename(dir)),
      )
      assert.ok(audit.used.length >= 1, JSON.stringify(audit))
    } finally {
      await c.close()
      await server.stop()
    }
  })
})
