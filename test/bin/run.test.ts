import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freePort, ManualClock, NotARunDirError, parseMetricsLines } from '../../actors/index.ts'
import { prepareRun } from '../../bin/commands/run.ts'
import { MetricsState, renderSnapshot } from '../../bin/monitor/metrics-state.ts'
import { RecipeError, RecipeMismatchError, type TaskCatalog } from '../../recipes/index.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { descendants, isGone, killSurvivors, type ProcStat, waitUntil } from '../support/process-tree.ts'
import { startTriad, type TriadProcess } from '../support/triad-process.ts'

/** The installed `triad` command (package.json `bin`), which registers tsx's loaders itself. */
const installedTriad = fileURLToPath(new URL('../../bin/triad.js', import.meta.url))

const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const tmp = () => mkdtempSync(join(tmpdir(), 'triad-run-'))
const catalog: TaskCatalog = Object.fromEntries(
  ['calc', 'sql', 'maze'].map((name) => [name, { name, difficulty: { min: 1, max: 4, default: 1 } }]),
)

/** Writes a recipe module into `dir` and returns its path. */
function recipeFile(dir: string, name: string, fields: string): string {
  const file = join(dir, `${name}.ts`)
  writeFileSync(
    file,
    `import { defineRecipe } from ${JSON.stringify(defineRecipePath)}\nexport default defineRecipe({ ${fields} })\n`,
  )
  return file
}

/** recipes/tiny.ts with a step and time budget that outlast a test (it is stopped by a signal). */
function longTinyRecipe(dir: string): string {
  const file = join(dir, 'long-tiny.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'long-tiny'")
    .replace(/budget: \{[^}]*\}/, 'budget: { maxSteps: 100000, maxMinutes: 10 }')
  assert.match(source, /maxSteps: 100000/)
  writeFileSync(file, source)
  return file
}

/**
 * Starts `triad run` of the long tiny recipe and resolves once the learner and the rollout
 * processes are ready (their `process.ready` events in the run log), with the run's directory.
 */
async function startLongRun(): Promise<{ run: TriadProcess; dir: string }> {
  const tmpDir = tmp()
  // nats-server on PATH: without it the run would be in one process (run-in-process.test.ts).
  const run = startTriad(['run', longTinyRecipe(tmpDir), '--runs-dir', join(tmpDir, 'runs')], {
    PATH: pathWithNatsServer(),
  })
  const created = await run.waitForLine((j) => j.event === 'run.created', 60_000)
  const dir = String(created.dir)
  const readyRoles = () => {
    const log = join(dir, 'logs', 'run.jsonl')
    if (!existsSync(log)) return []
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"event":"process.ready"'))
      .map((l) => (JSON.parse(l) as { name: string }).name)
  }
  await waitUntil(
    () => readyRoles().includes('learner') && readyRoles().includes('rollout'),
    120_000,
    () => `learner and rollout not ready; stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`,
  )
  return { run, dir }
}

/** Every file under `dir` with its contents (to show nothing was overwritten). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else out[relative(dir, p)] = readFileSync(p, 'utf8')
    }
  }
  walk(dir)
  return out
}

describe('bin/run', () => {
  it('prepareRun - makes a run directory holding the resolved recipe', async () => {
    const runs = join(tmp(), 'runs')
    const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5))
    const run = await prepareRun(recipeFile(tmp(), 'ok', "name: 'ok', tasks: [{ name: 'sql' }]"), {
      runsDir: runs,
      catalog,
      clock,
    })
    assert.equal(run.dir.id, 'ok-20260102-030405')
    assert.equal(run.resumed, false)
    const stored = JSON.parse(readFileSync(run.dir.recipeFile, 'utf8'))
    assert.deepEqual(stored, JSON.parse(JSON.stringify(run.recipe)))
    assert.deepEqual(stored.tasks[0].difficulty, { start: 1, min: 1, max: 4 })
  })

  it('prepareRun - an unknown task names the valid tasks and creates nothing', async () => {
    const runs = join(tmp(), 'runs')
    const file = recipeFile(tmp(), 'chess', "tasks: [{ name: 'chess' }]")
    await assert.rejects(
      prepareRun(file, { runsDir: runs, catalog }),
      (err: Error) =>
        err instanceof RecipeError &&
        /tasks\[0\]\.name: unknown task 'chess'; valid tasks: calc, maze, sql/.test(err.message),
    )
    assert.equal(existsSync(runs), false)
  })

  it('prepareRun - checks task names against the built-in task registry by default', async () => {
    const runs = join(tmp(), 'runs')
    const file = recipeFile(tmp(), 'chess2', "tasks: [{ name: 'calc' }, { name: 'chess' }]")
    await assert.rejects(
      prepareRun(file, { runsDir: runs }),
      /tasks\[1\]\.name: unknown task 'chess'; valid tasks: calc, code, maze, sql/,
    )
    assert.equal(existsSync(runs), false)
  })

  it('prepareRun - resuming keeps every file of the run and only appends to logs/run.jsonl', async () => {
    const dir = tmp()
    const v1 = recipeFile(dir, 'v1', "name: 'res', tasks: [{ name: 'calc' }], budget: { maxSteps: 10 }")
    const first = await prepareRun(v1, { runsDir: join(dir, 'runs'), catalog })
    writeFileSync(first.dir.metricsFile, '{"step":1}\n')
    mkdirSync(join(first.dir.checkpointsDir, 'step-000001'))
    writeFileSync(join(first.dir.checkpointsDir, 'step-000001', 'model.safetensors'), 'weights')
    const before = snapshot(first.dir.path)

    const longer = recipeFile(
      dir,
      'longer',
      "name: 'res', tasks: [{ name: 'calc' }], budget: { maxSteps: 30 }",
    )
    const resumed = await prepareRun(longer, { resume: first.dir.path, catalog })
    assert.equal(resumed.resumed, true)
    assert.equal(resumed.dir.path, first.dir.path)
    assert.deepEqual(resumed.recipe.budget, { maxSteps: 30 })
    const after = snapshot(first.dir.path)
    const log = 'logs/run.jsonl'
    assert.ok(after[log]!.startsWith(before[log]!))
    assert.match(
      after[log]!.slice(before[log]!.length),
      /^\{"event":"resume".*"budget":\{"maxSteps":30\}\}\n$/,
    )
    delete before[log]
    delete after[log]
    assert.deepEqual(after, before)

    const changed = recipeFile(dir, 'changed', "name: 'res', tasks: [{ name: 'calc' }], rl: { lr: 0.001 }")
    await assert.rejects(
      prepareRun(changed, { resume: first.dir.path, catalog }),
      (err: Error) =>
        err instanceof RecipeMismatchError && /rl\.lr: 0\.0001 in the run, 0\.001 now/.test(err.message),
    )
  })

  it('prepareRun - resuming a directory that is not a run is a clear error', async () => {
    const notRun = tmp()
    await assert.rejects(
      prepareRun(tiny, { resume: notRun, catalog }),
      (err: Error) =>
        err instanceof NotARunDirError &&
        err.message === `${notRun} is not a triad run directory (no recipe.json)`,
    )
    assert.deepEqual(readdirSync(notRun), [])
  })

  it('triad run - a wrong field is reported with its path and no run directory is made', async () => {
    const dir = tmp()
    const file = recipeFile(dir, 'bad', "tasks: [{ name: 'calc' }], rl: { eps_high: 0 }")
    const child = startTriad(['run', file, '--runs-dir', join(dir, 'runs')])
    assert.equal((await child.exited).code, 1)
    assert.equal(child.stderr(), `triad: invalid recipe ${file}:\nrl.eps_high: must be > 0\n`)
    assert.equal(existsSync(join(dir, 'runs')), false)
  })

  it('triad run - --resume of a directory that is not a run says so', async () => {
    const notRun = tmp()
    const child = startTriad(['run', tiny, '--resume', notRun])
    assert.equal((await child.exited).code, 1)
    assert.equal(child.stderr(), `triad: ${notRun} is not a triad run directory (no recipe.json)\n`)
  })

  it('triad run - a NATS URL that does not answer is a clear error and the new run holds only its recipe', async () => {
    const runs = join(tmp(), 'runs')
    const port = await freePort()
    const child = startTriad(['run', tiny, '--runs-dir', runs, '--nats', `nats://127.0.0.1:${port}`])
    const created = await child.waitForLine((j) => j.event === 'run.created', 60_000)
    assert.equal((await child.exited).code, 1)
    assert.match(child.stderr(), new RegExp(`^triad: cannot connect to NATS at nats://127.0.0.1:${port}`))
    assert.match(String(created.run), /^tiny-\d{8}-\d{6}$/)
    assert.deepEqual(readdirSync(String(created.dir)).sort(), [
      'checkpoints',
      'eval',
      'logs',
      'metrics.jsonl',
      'recipe.json',
    ])
    assert.equal(JSON.parse(readFileSync(join(String(created.dir), 'recipe.json'), 'utf8')).name, 'tiny')
  })

  it('triad run --check - the installed command loads a recipe inside the repository and one outside any package', async () => {
    // A file in a temporary folder is CommonJS to Node (no package.json with "type": "module").
    const outside = recipeFile(tmp(), 'my-recipe', "name: 'mine', tasks: [{ name: 'calc' }]")
    for (const [file, name] of [
      [outside, 'mine'],
      [tiny, 'tiny'],
    ] as const) {
      const child = spawn(process.execPath, [installedTriad, 'run', file, '--check'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
      })
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString()
      })
      const code = await new Promise((r) => child.once('exit', r))
      assert.equal(code, 0, err)
      assert.equal(JSON.parse(out).name, name)
    }
  })

  it('triad run --check - prints the resolved recipe and creates nothing', async () => {
    const dir = tmp()
    const child = startTriad(['run', tiny, '--check', '--runs-dir', join(dir, 'runs')])
    assert.equal((await child.exited).code, 0, child.stderr())
    const recipe = JSON.parse(child.stdout.join('\n'))
    assert.equal(recipe.name, 'tiny')
    assert.equal(recipe.derived.engines, 2)
    assert.equal(existsSync(join(dir, 'runs')), false)
  })

  it('triad run - killed with SIGKILL: the nats-server and the worker processes end with it', async () => {
    const { run } = await startLongRun()
    const children: ProcStat[] = descendants(run.child.pid!)
    try {
      const names = children.map((p) => p.comm)
      assert.ok(names.includes('nats-server'), `children: ${names.join(', ')}`)
      assert.ok(names.filter((n) => n === 'node').length >= 2, `children: ${names.join(', ')}`)
      run.child.kill('SIGKILL')
      await run.exited
      // Workers stop cleanly on the SIGTERM the kernel sends them, within their 10 s bound.
      await waitUntil(
        () => children.every(isGone),
        30_000,
        () =>
          `still running: ${children
            .filter((p) => !isGone(p))
            .map((p) => `${p.comm} ${p.pid}`)
            .join(', ')}`,
      )
    } finally {
      killSurvivors(children)
    }
  })

  it('triad run - a worker process the supervisor restarts counts in the restarts column', async () => {
    const { run, dir } = await startLongRun()
    const children = descendants(run.child.pid!)
    try {
      const pidLine = run.stdout.find((l) => /^learner pid \d+, rollout pid \d+/.test(l))!
      const rollout = Number(/rollout pid (\d+)/.exec(pidLine)![1])
      process.kill(rollout, 'SIGKILL')
      await waitUntil(
        () =>
          run.stdout.some((l) => l.startsWith(`rollout (pid ${rollout}) exited (SIGKILL); restarting in `)),
        30_000,
        () => run.stdout.join('\n'),
      )
      // The run reports the restart as a metric: into metrics.jsonl, and so into the live view.
      const state = new MetricsState()
      await waitUntil(
        () => {
          const { lines } = parseMetricsLines(readFileSync(join(dir, 'metrics.jsonl'), 'utf8'))
          for (const line of lines.filter((l) => l.role === 'run')) state.add(line)
          return state.value('process/rollout/restarts', 'sum') === 1
        },
        30_000,
        () => 'no metric process/rollout/restarts = 1 in metrics.jsonl',
      )
      assert.equal(state.value('process/learner/restarts', 'sum'), 0)
      assert.match(renderSnapshot(state, { run: 'x' }), /│ -\s*│ -\s*│ -\s*│ -\s*│ 1\s*│ \d+\s*│/)
      await run.kill('SIGTERM')
    } finally {
      killSurvivors(children)
    }
  })

  it('triad run - SIGTERM stops every child and says so; nothing is said to restart', async () => {
    const { run } = await startLongRun()
    const pidLine = run.stdout.find((l) => /^learner pid \d+, rollout pid \d+/.test(l))
    assert.ok(pidLine, run.stdout.join('\n'))
    const [, learner, rollout] = /^learner pid (\d+), rollout pid (\d+)/.exec(pidLine)!
    const children = descendants(run.child.pid!)
    try {
      run.child.kill('SIGTERM')
      const { code } = await run.exited
      assert.equal(code, 0, run.stderr())
      const out = run.stdout.join('\n')
      assert.match(out, /stopping \(interrupted\)/)
      assert.match(out, new RegExp(`^learner \\(pid ${learner}\\) stopped`, 'm'))
      assert.match(out, new RegExp(`^rollout \\(pid ${rollout}\\) stopped`, 'm'))
      assert.doesNotMatch(out, /restarting/)
      assert.ok(children.every(isGone), 'every child ended with the run')
    } finally {
      killSurvivors(children)
    }
  })
})
