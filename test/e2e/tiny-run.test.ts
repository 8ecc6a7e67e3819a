import assert from 'node:assert/strict'
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { readRunTransport } from '../../actors/index.ts'
import { collectStatus } from '../../bin/commands/status.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { checkTinyRun } from '../support/tiny-run-checks.ts'
import { RUN_STARTED, startTriad } from '../support/triad-process.ts'
import { within } from '../support/within.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

/** recipes/tiny.ts with the step budget `maxSteps` (a resume may change only the budget), written into `dir`. */
function tinyWithSteps(dir: string, maxSteps: number): string {
  const file = join(dir, `tiny-${maxSteps}.ts`)
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace(/budget: \{[^}]*\}/, `budget: { maxSteps: ${maxSteps}, maxMinutes: 5 }`)
  assert.ok(source.includes(`maxSteps: ${maxSteps}`))
  writeFileSync(file, source)
  return file
}

/** Every file under `dir` with its bytes, by path relative to `dir`. */
function files(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>()
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else out.set(relative(dir, p), readFileSync(p))
    }
  }
  walk(dir)
  return out
}

/**
 * The service names that `triad status --run RUN` lists (its `collectStatus`, on the NATS server the
 * run recorded in `dir`), asked every 100 ms until every name in `want` was seen or the run exited.
 * In process, not through the CLI: a CLI start takes seconds on a loaded machine, and the engines
 * and the rollout driver of the tiny run live for about as long.
 */
async function servicesDuringRun(
  run: string,
  dir: string,
  want: readonly string[],
  exited: Promise<unknown>,
): Promise<Set<string>> {
  let over = false
  void exited.then(() => {
    over = true
  })
  const seen = new Set<string>()
  while (!over && !want.every((n) => seen.has(n))) {
    const transport = await readRunTransport(dir)
    if (transport?.transport === 'nats' && transport.url) {
      const report = await collectStatus({ nats: transport.url, run, waitMs: 300 }).catch(() => undefined)
      for (const s of report?.services ?? []) seen.add(s.name)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return seen
}

/**
 * End to end: `triad run recipes/tiny.ts` as a user runs it (embedded nats-server, learner and
 * rollout processes, SFT, RL steps, final evaluation). It checks that every part took part and
 * wrote what it should; it does not check learning. The finished run is then resumed with its
 * only step checkpoint truncated.
 */
describe('e2e - triad run recipes/tiny.ts', () => {
  /** The run directory the first test finished. */
  let finished: string | undefined

  it('e2e - every role takes part, the step budget is reached, metrics and evaluation are written', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-'))
    const run = startTriad(['run', 'recipes/tiny.ts', '--runs-dir', runsDir], { PATH: pathWithNatsServer() })
    const created = await run.waitForText(RUN_STARTED, 60_000)
    // While the run goes on, `triad status --run` lists every actor group of its supervision
    // trees as a NATS service, the learner and the rollout driver included.
    const want = [
      'triad-learner',
      'triad-rollout',
      'triad-policy',
      'triad-env-controller',
      'triad-env-admin',
      'triad-env-worker',
    ]
    const seen = await servicesDuringRun(created[1]!, created[2]!, want, run.exited)
    for (const name of want)
      assert.ok(seen.has(name), `${name} not listed by triad status; saw ${[...seen].join(', ')}`)
    const { code } = await run.exited
    assert.equal(code, 0, run.stderr())
    const dir = created[2]!
    checkTinyRun(dir, run.stdout)
    assert.ok(
      run.stdout.some((l) => /^embedded nats-server at nats:/.test(l)),
      run.stdout.join('\n'),
    )
    assert.equal((await readRunTransport(dir))?.transport, 'nats')
    // Both processes ended by themselves: the learner at its budget, the rollout on the SIGTERM
    // that followed (not SIGKILLed after its grace).
    const exits = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"process.exited"'))
      .map((l) => JSON.parse(l) as { name: string; code: number | null; signal: string | null; next: string })
      .map(({ name, code, signal, next }) => ({ name, code, signal, next }))
    assert.deepEqual(exits, [
      { name: 'learner', code: 0, signal: null, next: 'done' },
      { name: 'rollout', code: 0, signal: null, next: 'stop' },
    ])
    finished = dir
  })

  it('e2e - resumed with its only step checkpoint truncated, the run exits 1 within 90 s with one line naming the learner, the file and its log; the rollout is stopped and nothing is deleted', async () => {
    assert.ok(finished, 'the tiny run above finished')
    const dir = finished
    const checkpoints = join(dir, 'checkpoints')
    // checkpoints.keep 1: step-3 is the only step checkpoint, so there is none to fall back to.
    const bad = join(checkpoints, 'step-3', 'model.safetensors')
    truncateSync(bad, Math.floor(statSync(bad).size / 2))
    const kept = files(checkpoints)
    const evals = files(join(dir, 'eval'))
    const logLines = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean).length

    const run = startTriad(
      ['run', tinyWithSteps(mkdtempSync(join(tmpdir(), 'triad-e2e-r-')), 4), '--resume', dir],
      {
        PATH: pathWithNatsServer(),
      },
    )
    const { code } = await within(
      run.exited,
      90_000,
      () => `${run.stdout.join('\n')}\n${run.stderr()}`,
    ).finally(() => run.kill('SIGKILL'))
    assert.equal(code, 1, run.stderr())
    const learnerLog = join(dir, 'logs', 'learner.log')
    const cause = `no step checkpoint in ${checkpoints} can be read, so the run cannot resume: step-3: ${bad}: `
    const errors = run.stderr().split('\n').filter(Boolean)
    assert.equal(errors.length, 1, run.stderr())
    assert.ok(
      errors[0]!.startsWith(`triad: the learner process failed and a restart cannot help: ${cause}`),
      errors[0],
    )
    assert.ok(errors[0]!.endsWith(`; see ${learnerLog}`), errors[0])
    const out = run.stdout.join('\n')
    assert.match(out, /^learner failed and a restart cannot help; giving up on it \(no step checkpoint in /m)
    assert.match(out, /^stopping \(the learner process failed and a restart cannot help: /m)
    // logs/learner.log is pino lines: the message of one of them says what was skipped and why.
    const messages = readFileSync(learnerLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { msg: string }).msg)
    assert.ok(
      messages.some((m) =>
        new RegExp(
          `^skipping step-3: it cannot be read \\(${bad}: .+\\); no older step checkpoint is left$`,
        ).test(m),
      ),
      messages.join('\n'),
    )
    // The learner was started once (a restart cannot help), the rollout stopped cleanly.
    const events = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(logLines)
      .map((l) => JSON.parse(l) as { event: string; name?: string; next?: string; reason?: string })
    assert.equal(events.filter((e) => e.event === 'process.started' && e.name === 'learner').length, 1)
    assert.ok(
      events.some(
        (e) => e.event === 'process.gave-up' && e.name === 'learner' && e.reason === 'not-restartable',
      ),
    )
    assert.ok(events.some((e) => e.event === 'process.exited' && e.name === 'rollout' && e.next === 'stop'))
    assert.ok(events.some((e) => e.event === 'stop' && e.reason === 'failed'))
    // Nothing of the run is deleted or changed: the checkpoints (the bad one too) and evaluations.
    assert.deepEqual(files(checkpoints), kept)
    assert.deepEqual(files(join(dir, 'eval')), evals)
    assert.equal(existsSync(join(dir, 'run.lock')), false, 'the lock is released')
  })
})
