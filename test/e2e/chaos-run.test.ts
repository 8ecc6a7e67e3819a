import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { connectNats, startNatsServer, streamManager, trajectoryStreamName } from '../../actors/index.ts'
import { auditGroups } from '../support/group-audit.ts'
import { pathWithNatsServer, pathWithoutNatsServer } from '../support/nats-path.ts'
import { descendants, killSurvivors, type ProcStat } from '../support/process-tree.ts'
import { RUN_STARTED, runTriad, startTriad, type TriadProcess } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

/** Seconds between kills, and the schedule's seed: seed 2 kills the rollout, the learner, then nats-server. */
const EVERY_S = 8
const CHAOS_SEED = 2
/** The run's time budget: about three kill intervals of RL, whatever the machine's speed. */
const BUDGET_MINUTES = 0.5

/**
 * recipes/tiny.ts renamed `chaos-tiny`, with a time budget and no step budget: a step budget ends
 * too soon on a fast machine (12 steps, then 40, finished before the first kill at 8 s once the
 * native engine took a tiny step in about 0.1 s), and a run must outlast the kill interval.
 */
function tinyRecipe(dir: string): string {
  const path = join(dir, 'chaos-tiny.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'chaos-tiny'")
    .replace(/budget: \{[^}]*\}/, `budget: { maxMinutes: ${BUDGET_MINUTES} }`)
  assert.match(source, new RegExp(`budget: \\{ maxMinutes: ${BUDGET_MINUTES} \\}`))
  writeFileSync(path, source)
  return path
}

const shown = (run: TriadProcess) => () => `stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`

/**
 * `triad run recipes/tiny.ts --chaos 8`: a role (learner, rollout, or the embedded nats-server) gets
 * SIGKILL every 8 s from a seeded schedule through the whole run. The run still ends at its budget;
 * the kill list it prints is the list of kills done (each one seen as that process's SIGKILL exit
 * in `logs/run.jsonl`, and no other SIGKILL exit); its group audit is clean, and so is the test's
 * own audit of the stream: no group trained twice, none lost.
 */
describe('e2e - triad run --chaos: kills through a whole tiny run, which still finishes with a clean audit', () => {
  const tmpDir = mkdtempSync(join(tmpdir(), 'triad-chaos-'))
  const started: TriadProcess[] = []
  const survivors: ProcStat[] = []
  after(async () => {
    for (const run of started) await run.kill('SIGKILL')
    killSurvivors(survivors)
  })

  it(`--chaos ${EVERY_S} --chaos-seed ${CHAOS_SEED}: the steps done, the printed kills are the kills done, the audit clean`, async (t) => {
    const run = startTriad(
      [
        'run',
        tinyRecipe(tmpDir),
        '--runs-dir',
        join(tmpDir, 'runs'),
        '--chaos',
        String(EVERY_S),
        '--chaos-seed',
        String(CHAOS_SEED),
      ],
      { PATH: pathWithNatsServer() },
    )
    started.push(run)
    const dir = (await run.waitForText(RUN_STARTED, 60_000))[2]!
    await run.waitForText(/^chaos: kill 1 at /, 120_000)
    survivors.push(...descendants(run.child.pid!))
    const exit = await run.exited
    assert.equal(exit.code, 0, shown(run)())
    const out = run.stdout.join('\n')
    assert.match(out, /^stopping \(time budget\)$/m)
    assert.match(
      out,
      new RegExp(
        `^chaos: SIGKILL to one of learner, rollout, nats-server every ${EVERY_S} s \\(seed ${CHAOS_SEED}\\)$`,
        'm',
      ),
    )
    // The report: the count, then one line per kill, then the restarts and the audit.
    const count = Number(/^chaos: (\d+) kills/m.exec(out)?.[1])
    const reported = [
      ...out.matchAll(/^chaos: kill (\d+) at [\d.]+ s: ([\w-]+) \(pid (\d+)\), SIGKILL$/gm),
    ].map((m) => `${m[2]} ${m[3]}`)
    // Each kill is printed twice: as it happens, and in the report at the end.
    assert.equal(reported.length, 2 * count, out)
    const kills = reported.slice(count)
    assert.deepEqual(reported.slice(0, count), kills)
    assert.ok(count >= 1, out)
    t.diagnostic(`kills: ${kills.join(', ')}`)
    // The kills done, as the supervisors saw them: every SIGKILL exit of a role or the server.
    const events = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string; name?: string; pid?: number; signal?: string })
    const sigkilled = events
      .filter(
        (e) => (e.event === 'process.exited' || e.event === 'nats-server.exited') && e.signal === 'SIGKILL',
      )
      .map((e) => `${e.event === 'nats-server.exited' ? 'nats-server' : e.name} ${e.pid}`)
    assert.deepEqual([...sigkilled].sort(), [...kills].sort())
    assert.deepEqual(
      events.filter((e) => e.event === 'chaos.kill').map((e) => `${e.name} ${e.pid}`),
      kills,
    )
    const restarts = /^chaos: restarts: (.+)$/m.exec(out)?.[1]
    assert.ok(restarts, out)
    assert.match(
      out,
      /^group audit: \d+ published, \d+ used, \d+ dropped, \d+ still in the stream, 0 trained twice, 0 lost: clean$/m,
    )
    assert.ok(readdirSync(join(dir, 'eval')).some((f) => f.startsWith('final-')))
    // The test's own audit of the stream.
    const server = await startNatsServer({ storeDir: join(dir, 'nats'), monitorPort: false })
    const c = await connectNats({ servers: server.url, run: 'audit', role: 'test', id: '0' })
    try {
      const audit = await auditGroups(
        join(dir, 'checkpoints'),
        await streamManager(c.nc),
        trajectoryStreamName(basename(dir)),
      )
      assert.ok(audit.used.length >= 4, JSON.stringify(audit))
    } finally {
      await c.close()
      await server.stop()
    }
  })

  it('bad --chaos options: one line each, exit 2, no run directory made', async () => {
    const runsDir = join(tmpDir, 'refused')
    const cases: [string[], string][] = [
      [['--chaos', '0'], "triad: --chaos wants a positive number of seconds between two kills, got '0'"],
      [['--chaos', 'abc'], "triad: --chaos wants a positive number of seconds between two kills, got 'abc'"],
      [
        ['--chaos', '5', '--in-process'],
        'triad: --chaos and --in-process exclude each other: chaos mode kills role processes, and one process has none',
      ],
      [['--chaos-seed', '3'], 'triad: --chaos-seed needs --chaos'],
      [['--chaos', '5', '--chaos-seed', '1.5'], "triad: --chaos-seed wants an integer, got '1.5'"],
    ]
    for (const [args, line] of cases) {
      const r = await runTriad(['run', tiny, '--runs-dir', runsDir, ...args])
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trim(), line)
    }
    assert.equal(existsSync(runsDir), false)
  })

  it('--chaos with no nats-server on PATH (the run would be one process): one line, exit 1, nothing started', async () => {
    const run = startTriad(['run', tiny, '--runs-dir', join(tmpDir, 'no-server'), '--chaos', '5'], {
      PATH: pathWithoutNatsServer(),
    })
    started.push(run)
    const exit = await run.exited
    assert.equal(exit.code, 1, shown(run)())
    assert.equal(
      run.stderr().trim(),
      'triad: --chaos needs the roles in processes of their own: install nats-server (apt-get install nats-server) or join one with --nats; it does not work with --in-process',
    )
    assert.doesNotMatch(run.stdout.join('\n'), /^learner /m)
  })
})
