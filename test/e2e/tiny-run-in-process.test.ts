import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { natsServerOnPath, readRunTransport } from '../../actors/index.ts'
import { pathWithoutNatsServer } from '../support/nats-path.ts'
import { descendants } from '../support/process-tree.ts'
import { checkTinyRun } from '../support/tiny-run-checks.ts'
import { RUN_STARTED, startTriad } from '../support/triad-process.ts'

/**
 * End to end, without nats-server: `triad run recipes/tiny.ts` with PATH stripped of every folder
 * that holds one (a real child process; node itself is started by its full path). The run must say
 * that it runs in one process and why, run learner and rollout in that process on the in-process
 * transport, and leave the same run directory as the multi-process run (tiny-run.test.ts).
 */
describe('e2e - triad run recipes/tiny.ts without nats-server on PATH', () => {
  it('e2e - one process: it says so, every role takes part, the step budget is reached, metrics, checkpoints and evaluation are written', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-solo-'))
    const PATH = pathWithoutNatsServer()
    assert.equal(natsServerOnPath(PATH), undefined)
    const run = startTriad(['run', 'recipes/tiny.ts', '--runs-dir', runsDir], { PATH })
    const created = await run.waitForText(RUN_STARTED, 60_000)
    // No nats-server and no worker process is started: sample the process tree while it runs.
    const pid = run.child.pid!
    const children = new Set<string>()
    // The evaluations' `triad eval` processes are the only node children a run may have here.
    // A process that ended between the listing and the read of its command line (gone, or a zombie
    // with an empty one) is skipped.
    const commandLine = (p: number) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')
      } catch {
        return undefined
      }
    }
    const watch = setInterval(() => {
      for (const p of descendants(pid)) {
        const line = commandLine(p.pid)
        if (line?.some((arg) => arg !== ''))
          children.add(line.includes('eval') ? `${p.comm} (triad eval)` : p.comm)
      }
    }, 500)
    const { code } = await run.exited
    clearInterval(watch)
    assert.equal(code, 0, run.stderr())
    const dir = created[2]!
    const said = run.stdout.find((l) => l.startsWith('nats-server not found on PATH'))
    assert.ok(said, run.stdout.join('\n'))
    assert.match(
      said,
      /running learner and rollout in one process on the in-process transport \(triad monitor cannot attach\)/,
    )
    assert.match(said, /install nats-server .* to spread roles over processes and machines$/)
    assert.ok(
      run.stdout.some((l) => l.startsWith(`learner and rollout in this process (pid ${pid})`)),
      run.stdout.join('\n'),
    )
    assert.ok(!run.stdout.some((l) => l.startsWith('embedded nats-server')))
    // (tsx's esbuild service may be there; a worker would be a node process.)
    assert.deepEqual(
      [...children].filter((c) => /nats-server|node/.test(c) && !c.endsWith('(triad eval)')),
      [],
    )

    checkTinyRun(dir, run.stdout)
    assert.equal((await readRunTransport(dir))?.transport, 'in-process')
    assert.ok(!existsSync(join(dir, 'nats')), 'no JetStream store: there was no server')
  })
})
