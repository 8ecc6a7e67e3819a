import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, afterEach, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { connectNats, startNatsServer, streamManager, trajectoryStreamName } from '../../actors/index.ts'
import { NATS_STORE_LOCK_FILE, RUN_LOCK_FILE } from '../../actors/testing.ts'
import { auditGroups } from '../support/group-audit.ts'
import { learnerStep } from '../support/learner-step.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { descendants, isGone, killSurvivors, type ProcStat, waitUntil } from '../support/process-tree.ts'
import { RUN_STARTED, startTriad, type TriadProcess } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
const env = { PATH: pathWithNatsServer() }

/** The tmpfs each case runs on, MiB: a tiny run takes about 3 MiB, so there is room until the fill. */
const TMPFS_MIB = 24

/** The one line of a write error: writer, path, and "no space left on device". */
const NO_SPACE = /^stopping \(([\w-]+): cannot write (\/\S+): no space left on device \(ENOSPC\)\)$/m

/** recipes/tiny.ts renamed `full-tiny` (no time budget to run out under load), written into `dir`. */
function tinyRecipe(dir: string): string {
  const path = join(dir, 'full-tiny.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'full-tiny'")
    .replace(/budget: \{[^}]*\}/, 'budget: { maxSteps: 3, maxMinutes: 10 }')
  assert.match(source, /maxMinutes: 10/)
  writeFileSync(path, source)
  return path
}

/** Fills the file system of `dir` with one file until a write fails with ENOSPC; returns the file. */
function fill(dir: string): string {
  const file = join(dir, 'fill')
  const { bavail, bsize } = statfsSync(dir)
  try {
    writeFileSync(file, Buffer.alloc(Number(bavail) * Number(bsize) + 1_048_576))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  }
  assert.ok(statfsSync(dir).bavail < 64, 'the file system is full')
  return file
}

/** What a failed wait shows. */
const shown = (run: TriadProcess) => () => `stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`

/**
 * A run directory on a small tmpfs (mounted here, as root, and unmounted after), filled by the test
 * at three moments found on the run's own output: the cold start (its roles just started), RL (the
 * first learner step in metrics.jsonl) and the final evaluation (the stop at the step budget). Each
 * time: one line naming the writer, the path and "no space left on device", exit 1, no process of
 * the run left (the embedded nats-server included), the run lock and no temporary lock file left;
 * then, with the space freed, the resume finishes the run and the group audit is clean.
 */
describe('e2e - a full disk: one line, a clean stop, exit 1, and a resume once space is freed', () => {
  const root = mkdtempSync(join(tmpdir(), 'triad-full-'))
  const recipe = tinyRecipe(root)
  const started: TriadProcess[] = []
  const survivors: ProcStat[] = []
  const mounts: string[] = []
  afterEach(async () => {
    for (const run of started.splice(0)) await run.kill('SIGKILL')
  })
  after(() => {
    killSurvivors(survivors)
    for (const m of mounts) execFileSync('umount', ['-l', m])
    rmSync(root, { recursive: true, force: true })
  })

  /** A fresh tmpfs of `TMPFS_MIB` MiB for one case. */
  const tmpfs = (name: string) => {
    const dir = join(root, name)
    mkdirSync(dir)
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_MIB}m`, 'tmpfs', dir])
    mounts.push(dir)
    return dir
  }

  /** Runs the case: starts the run, waits for `moment`, fills the disk, checks the stop, frees, resumes. */
  async function diskFullAt(
    name: string,
    moment: (run: TriadProcess, dir: string) => Promise<void>,
    withServer = true,
    extra: string[] = [],
  ) {
    const mount = tmpfs(name)
    const run = startTriad(['run', recipe, '--runs-dir', join(mount, 'runs'), ...extra], env)
    started.push(run)
    const dir = (await run.waitForText(RUN_STARTED, 60_000))[2]!
    await moment(run, dir)
    const children = descendants(run.child.pid!)
    survivors.push(...children)
    // Before the final evaluation the embedded server runs: it must not outlive the run.
    if (withServer)
      assert.ok(
        children.some((p) => p.comm === 'nats-server'),
        children.map((p) => p.comm).join(', '),
      )
    const filler = fill(mount)
    const exit = await run.exited
    assert.equal(exit.code, 1, shown(run)())
    const out = run.stdout.join('\n')
    const line = NO_SPACE.exec(out)
    assert.ok(line, shown(run)())
    assert.ok(line[2]!.startsWith(dir), `the path ${line[2]} is in the run directory`)
    // stderr: the same failure once, as one line, no stack trace.
    const err = run.stderr().trim().split('\n')
    assert.equal(err.length, 1, run.stderr())
    assert.match(err[0]!, /^triad: [\w-]+: cannot write \/\S+: no space left on device \(ENOSPC\)$/)
    await waitUntil(
      () => children.every(isGone),
      15_000,
      () => `left running: ${children.filter((c) => !isGone(c)).map((c) => `${c.comm} ${c.pid}`)}`,
    )
    const files = readdirSync(dir)
    assert.ok(!files.includes(RUN_LOCK_FILE), files.join(', '))
    assert.deepEqual(
      files.filter((f) => f.startsWith('.run.lock.')),
      [],
    )
    if (withServer || existsSync(join(dir, 'nats')))
      assert.ok(!readdirSync(join(dir, 'nats')).includes(NATS_STORE_LOCK_FILE))
    // Space freed: the resume runs to the step budget.
    rmSync(filler)
    const resumed = startTriad(['run', recipe, '--resume', dir, ...extra], env)
    started.push(resumed)
    const done = await resumed.exited
    assert.equal(done.code, 0, shown(resumed)())
    assert.match(resumed.stdout.join('\n'), /^stopping \(3 steps done\)$/m)
    assert.ok(readdirSync(join(dir, 'eval')).some((f) => f.startsWith('final-')))
    // One process keeps its stream in memory: only a run over NATS has a stream to audit.
    if (!extra.includes('--in-process')) await audit(dir)
    return line
  }

  /** The group audit of a stopped run: nothing trained twice, nothing lost. */
  async function audit(dir: string) {
    const server = await startNatsServer({ storeDir: join(dir, 'nats'), monitorPort: false })
    const t = await connectNats({ servers: server.url, run: 'audit', role: 'test', id: '0' })
    try {
      const a = await auditGroups(
        join(dir, 'checkpoints'),
        await streamManager(t.nc),
        trajectoryStreamName(basename(dir)),
      )
      assert.ok(a.used.length >= 1, JSON.stringify(a))
    } finally {
      await t.close()
      await server.stop()
    }
  }

  it('full during the cold start (its roles just started): one line, exit 1, nothing left running; resumed once freed', async (t) => {
    t.diagnostic(
      (
        await diskFullAt('sft', (run) =>
          run.waitForText(/^learner pid \d+, rollout pid \d+/, 60_000).then(() => {}),
        )
      )[0],
    )
  })

  it('full during RL (after the first learner step): the same', async (t) => {
    t.diagnostic(
      (await diskFullAt('rl', (run, dir) => waitUntil(() => learnerStep(dir) >= 1, 120_000, shown(run))))[0],
    )
  })

  it('full during the final evaluation (once the roles stopped and it evaluates the last checkpoint): the same', async (t) => {
    const line = await diskFullAt(
      'final',
      (run) => run.waitForText(/^evaluating step-3: /, 120_000).then(() => {}),
      false,
    )
    t.diagnostic(line[0])
    assert.ok(line[2]!.includes('/eval'), line[0])
  })

  it("full during RL of a run in one process (--in-process: the roles' loggers and the learner in this process): the same", async (t) => {
    const line = await diskFullAt(
      'in-process',
      (run, dir) => waitUntil(() => learnerStep(dir) >= 1, 120_000, shown(run)),
      false,
      ['--in-process'],
    )
    t.diagnostic(line[0])
  })
})
