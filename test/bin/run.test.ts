import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  NotARunDirError,
  RunLockedError,
  readLatestCheckpoint,
  runDirPaths,
  writeEvalResult,
} from '../../actors/index.ts'
import { freePort, ManualClock, parseMetricsLines, RUN_LOCK_FILE } from '../../actors/testing.ts'
import { type PreparedRun, prepareRun, type ReadyRun, startedLine } from '../../bin/commands/run.ts'
import { MetricsState, renderSnapshot } from '../../bin/monitor/metrics-state.ts'
import { RecipeMismatchError } from '../../bin/run/index.ts'
import { RecipeError, type TaskCatalog } from '../../recipes/index.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { descendants, isGone, killSurvivors, type ProcStat, waitUntil } from '../support/process-tree.ts'
import { RUN_STARTED, startTriad, type TriadProcess } from '../support/triad-process.ts'

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

/**
 * recipes/tiny.ts renamed `long-tiny`, by default with a step and time budget that outlast a test
 * (it is stopped by a signal); `budget` replaces it (a resume may change only the budget).
 */
function longTinyRecipe(
  dir: string,
  budget = '{ maxSteps: 100000, maxMinutes: 10 }',
  file = 'long-tiny.ts',
): string {
  const path = join(dir, file)
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("name: 'tiny'", "name: 'long-tiny'")
    .replace(/budget: \{[^}]*\}/, `budget: ${budget}`)
  assert.ok(source.includes(`budget: ${budget}`))
  writeFileSync(path, source)
  return path
}

/** The run of a `prepareRun` that made one ready (fails the test otherwise). */
function ready(run: PreparedRun): ReadyRun {
  assert.equal(run.status, 'ready')
  return run as ReadyRun
}

/** A process that runs until the test kills it (a live holder of a lock). */
function liveProcess() {
  return spawn(process.execPath, ['-e', 'process.stdin.resume()'], { stdio: ['pipe', 'ignore', 'ignore'] })
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
  const created = await run.waitForText(RUN_STARTED, 60_000)
  const dir = created[2]!
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
    // The new run holds its directory's lock until it is released.
    assert.equal(JSON.parse(readFileSync(join(run.dir.path, RUN_LOCK_FILE), 'utf8')).pid, process.pid)
    await ready(run).lock.release()
    assert.equal(existsSync(join(run.dir.path, RUN_LOCK_FILE)), false)
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
    await ready(first).lock.release()
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
    await ready(resumed).lock.release()
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

  it('prepareRun - a run directory locked by a live process is refused, naming it and the pid, and nothing changes', async () => {
    const dir = tmp()
    const v1 = recipeFile(dir, 'v1', "name: 'lk', tasks: [{ name: 'calc' }], budget: { maxSteps: 10 }")
    const first = ready(await prepareRun(v1, { runsDir: join(dir, 'runs'), catalog }))
    // Held by this process: a second run here, even from the same process, is refused.
    await assert.rejects(
      prepareRun(v1, { resume: first.dir.path, catalog }),
      (err: Error) =>
        err instanceof RunLockedError &&
        err.message.startsWith(`${first.dir.path} is in use by another triad run (pid ${process.pid},`),
    )
    await first.lock.release()
    const holder = liveProcess()
    try {
      writeFileSync(
        join(first.dir.path, RUN_LOCK_FILE),
        JSON.stringify({ pid: holder.pid, hostname: hostname(), started: 0 }),
      )
      const before = snapshot(first.dir.path)
      await assert.rejects(
        prepareRun(v1, { resume: first.dir.path, catalog }),
        (err: Error) =>
          err instanceof RunLockedError &&
          err.message ===
            `${first.dir.path} is in use by another triad run (pid ${holder.pid}, since 1970-01-01T00:00:00.000Z); stop it or wait for it to end before running in this directory again`,
      )
      assert.deepEqual(snapshot(first.dir.path), before)
    } finally {
      holder.kill('SIGKILL')
    }
  })

  it('prepareRun - a resumed run at its step budget with its final evaluation written is finished and untouched, unless the budget was raised', async () => {
    const dir = tmp()
    const three = recipeFile(dir, 'three', "name: 'fin', tasks: [{ name: 'calc' }], budget: { maxSteps: 3 }")
    const first = ready(await prepareRun(three, { runsDir: join(dir, 'runs'), catalog }))
    await first.lock.release()
    writeFileSync(
      join(first.dir.checkpointsDir, 'latest.json'),
      JSON.stringify({ version: 3, usedSeqs: [], dir: join(first.dir.checkpointsDir, 'step-3') }),
    )
    // Stopped during its final evaluation: not finished, a resume evaluates it.
    const unevaluated = ready(await prepareRun(three, { resume: first.dir.path, catalog }))
    await unevaluated.lock.release()
    const evalFile = await writeEvalResult(first.dir, 'final-1000', {
      step: 3,
      rows: [{ checkpoint: 'step-3' }],
    })
    const before = snapshot(first.dir.path)
    const finished = await prepareRun(three, { resume: first.dir.path, catalog })
    assert.equal(finished.status, 'finished')
    assert.deepEqual(finished.status === 'finished' && finished.finished, { step: 3, maxSteps: 3, evalFile })
    assert.deepEqual(snapshot(first.dir.path), before, 'nothing written, no lock left')

    const five = recipeFile(dir, 'five', "name: 'fin', tasks: [{ name: 'calc' }], budget: { maxSteps: 5 }")
    const raised = ready(await prepareRun(five, { resume: first.dir.path, catalog }))
    await raised.lock.release()
    assert.deepEqual(raised.recipe.budget, { maxSteps: 5 })
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

  it('startedLine - names the run and its directory, new or resumed', () => {
    const dir = runDirPaths('/data/runs/tiny-20261130-034039')
    assert.equal(
      startedLine(dir, false),
      'run tiny-20261130-034039 started in /data/runs/tiny-20261130-034039',
    )
    assert.equal(
      startedLine(dir, true),
      'run tiny-20261130-034039 resumed in /data/runs/tiny-20261130-034039',
    )
  })

  it('triad run - a wrong field is reported with its path and no run directory is made', async () => {
    const dir = tmp()
    const file = recipeFile(dir, 'bad', "tasks: [{ name: 'calc' }], rl: { eps_high: 0 }")
    const child = startTriad(['run', file, '--runs-dir', join(dir, 'runs')])
    assert.equal((await child.exited).code, 2)
    assert.equal(child.stderr(), `triad: invalid recipe ${file}: rl.eps_high: must be > 0\n`)
    assert.equal(existsSync(join(dir, 'runs')), false)
  })

  it('triad run - a --runs-dir that is a file, or lies under one, is one clear line; nothing is made', async () => {
    const file = join(tmp(), 'runs')
    writeFileSync(file, 'not a folder\n')
    const child = startTriad(['run', tiny, '--runs-dir', file])
    assert.equal((await child.exited).code, 1)
    assert.equal(
      child.stderr(),
      `triad: cannot make a run directory in ${file}: it is a file, not a folder\n`,
    )
    assert.deepEqual(child.stdout, [])
    assert.equal(readFileSync(file, 'utf8'), 'not a folder\n')
    const under = startTriad(['run', tiny, '--runs-dir', join(file, 'sub')])
    assert.equal((await under.exited).code, 1)
    assert.equal(
      under.stderr(),
      `triad: cannot make a run directory in ${join(file, 'sub')}: a folder on its path is a file\n`,
    )
  })

  it('triad run - every problem of a bad recipe is reported in one run, each once', async () => {
    const dir = tmp()
    const file = recipeFile(
      dir,
      'bad-all',
      "tasks: [{ name: 'calc', difficulty: { start: 9 } }, { name: 'chess' }], model: { width: 100, heads: 3 }, rl: { eps_high: 0 }",
    )
    const child = startTriad(['run', file, '--runs-dir', join(dir, 'runs')])
    assert.equal((await child.exited).code, 2)
    assert.equal(
      child.stderr(),
      `triad: invalid recipe ${file}: ` +
        'rl.eps_high: must be > 0; ' +
        'model.width: must be a multiple of model.heads (3); ' +
        "tasks[0].difficulty.start: 9 is above calc's highest level (7); " +
        "tasks[1].name: unknown task 'chess'; valid tasks: calc, code, maze, sql\n",
    )
    assert.deepEqual(child.stdout, [])
    assert.equal(existsSync(join(dir, 'runs')), false)
  })

  it('triad run - --resume of a directory that is not a run says so', async () => {
    const notRun = tmp()
    const child = startTriad(['run', tiny, '--resume', notRun])
    assert.equal((await child.exited).code, 2)
    assert.equal(child.stderr(), `triad: ${notRun} is not a triad run directory (no recipe.json)\n`)
  })

  it('triad run - a NATS URL that does not answer is a clear error naming it, and no run directory is made or changed', async () => {
    const runs = join(tmp(), 'runs')
    const port = await freePort()
    const url = `nats://127.0.0.1:${port}`
    const child = startTriad(['run', tiny, '--runs-dir', runs, '--nats', url])
    assert.equal((await child.exited).code, 1)
    assert.match(child.stderr(), new RegExp(`^triad: cannot connect to NATS at ${url}`))
    assert.deepEqual(child.stdout, [])
    assert.equal(existsSync(runs), false)

    // Resuming over a dead URL: the run is left as it was (no resume line, no lock).
    const made = ready(await prepareRun(tiny, { runsDir: runs }))
    await made.lock.release()
    const before = snapshot(made.dir.path)
    const resume = startTriad(['run', tiny, '--resume', made.dir.path, '--nats', url])
    assert.equal((await resume.exited).code, 1)
    assert.match(resume.stderr(), new RegExp(`^triad: cannot connect to NATS at ${url}`))
    assert.deepEqual(snapshot(made.dir.path), before)
  })

  it('triad run --resume - of a run another live process holds fails at once naming the dir and the pid; of a finished run says so and exits 0; nothing changes', async () => {
    const made = ready(await prepareRun(tiny, { runsDir: join(tmp(), 'runs') }))
    await made.lock.release()
    const dir = made.dir.path
    const holder = liveProcess()
    try {
      writeFileSync(
        join(dir, RUN_LOCK_FILE),
        JSON.stringify({ pid: holder.pid, hostname: hostname(), started: 0 }),
      )
      const before = snapshot(dir)
      const locked = startTriad(['run', tiny, '--resume', dir])
      assert.equal((await locked.exited).code, 1)
      assert.equal(
        locked.stderr(),
        `triad: ${dir} is in use by another triad run (pid ${holder.pid}, since 1970-01-01T00:00:00.000Z); stop it or wait for it to end before running in this directory again\n`,
      )
      assert.deepEqual(snapshot(dir), before)
    } finally {
      holder.kill('SIGKILL')
    }
    rmSync(join(dir, RUN_LOCK_FILE))
    // tiny.ts: 3 steps. The run reached them and evaluated step 3 at its end.
    writeFileSync(
      join(made.dir.checkpointsDir, 'latest.json'),
      JSON.stringify({ version: 3, usedSeqs: [], dir: join(made.dir.checkpointsDir, 'step-3') }),
    )
    await writeEvalResult(made.dir, 'final-1000', { step: 3, rows: [{ checkpoint: 'step-3' }] })
    const before = snapshot(dir)
    const finished = startTriad(['run', tiny, '--resume', dir])
    assert.equal((await finished.exited).code, 0, finished.stderr())
    assert.deepEqual(finished.stdout, [
      `run ${made.dir.id} is finished: step 3 reached the step budget of 3 and its final evaluation is ${join(dir, 'eval', 'final-1000.json')}; nothing to do (raise budget.maxSteps in the recipe to train further)`,
    ])
    assert.deepEqual(snapshot(dir), before)
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
    // tiny.ts: 2 tasks x 4 expert trajectories, batchSize 4, 1 epoch; contextLength 384.
    assert.equal(recipe.derived.sftTrajectories, 8)
    assert.equal(recipe.derived.sftBatchTokens, 4 * 384)
    assert.equal(recipe.derived.sftStepsAtMost, 2)
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

  it('triad run - holds run.lock while it runs (a resume of it fails at once naming its pid); SIGTERM stops every child, says so, nothing is said to restart, the lock goes, and it exits 143', async () => {
    const { run, dir } = await startLongRun()
    const pidLine = run.stdout.find((l) => /^learner pid \d+, rollout pid \d+/.test(l))
    assert.ok(pidLine, run.stdout.join('\n'))
    const [, learner, rollout] = /^learner pid (\d+), rollout pid (\d+)/.exec(pidLine)!
    const children = descendants(run.child.pid!)
    try {
      assert.equal(JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).pid, run.child.pid)
      const second = startTriad(['run', longTinyRecipe(tmp()), '--resume', dir], {
        PATH: pathWithNatsServer(),
      })
      assert.equal((await second.exited).code, 1)
      assert.match(
        second.stderr(),
        new RegExp(`^triad: ${dir} is in use by another triad run \\(pid ${run.child.pid}, since `),
      )
      assert.doesNotMatch(readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8'), /"event":"resume"/)

      run.child.kill('SIGTERM')
      const { code } = await run.exited
      // 128 + 15: a script sees the run as interrupted, after the same clean stop.
      assert.equal(code, 143, run.stderr())
      const out = run.stdout.join('\n')
      assert.match(out, /stopping \(interrupted\)/)
      // Each stopped by itself (exit code 0): not killed after its grace.
      assert.match(out, new RegExp(`^learner \\(pid ${learner}\\) stopped$`, 'm'))
      assert.match(out, new RegExp(`^rollout \\(pid ${rollout}\\) stopped$`, 'm'))
      assert.doesNotMatch(out, /restarting/)
      assert.ok(children.every(isGone), 'every child ended with the run')
      assert.equal(existsSync(join(dir, RUN_LOCK_FILE)), false, 'the lock is released')
    } finally {
      killSurvivors(children)
    }
  })

  it('triad run - killed with SIGKILL during a periodic evaluation: the resume takes over the stale lock, evaluates that step again and ends the run; a further resume says it is finished', async () => {
    const tmpDir = tmp()
    // One process (fewer to start); the run directory is the same as over NATS.
    const run = startTriad([
      'run',
      longTinyRecipe(tmpDir),
      '--runs-dir',
      join(tmpDir, 'runs'),
      '--in-process',
    ])
    const created = await run.waitForText(RUN_STARTED, 60_000)
    const dir = created[2]!
    const copy = join(dir, 'eval', '.step-000002-checkpoint')
    await waitUntil(
      () => existsSync(copy),
      240_000,
      () => `no periodic evaluation of step 2; stdout:\n${run.stdout.join('\n')}\nstderr:\n${run.stderr()}`,
    )
    const children = descendants(run.child.pid!)
    try {
      run.child.kill('SIGKILL')
      await run.exited
      await waitUntil(
        () => children.every(isGone),
        30_000,
        () => 'the evaluation process outlived the run',
      )
    } finally {
      killSurvivors(children)
    }
    assert.ok(existsSync(copy), 'the copy of the interrupted evaluation is left')
    assert.equal(existsSync(join(dir, 'eval', 'step-000002.json')), false, 'killed before it was written')
    assert.equal(
      JSON.parse(readFileSync(join(dir, RUN_LOCK_FILE), 'utf8')).pid,
      run.child.pid,
      'a stale lock',
    )

    // Resume with a step budget at the run's last checkpoint: no more training, only what is missing.
    const last = readLatestCheckpoint(join(dir, 'checkpoints'))!.version
    assert.ok(last >= 2, `latest checkpoint ${last}`)
    const resumeRecipe = longTinyRecipe(tmpDir, `{ maxSteps: ${last}, maxMinutes: 10 }`, 'resume.ts')
    const resumed = startTriad(['run', resumeRecipe, '--resume', dir, '--in-process'])
    assert.equal((await resumed.exited).code, 0, resumed.stderr())
    const out = resumed.stdout.join('\n')
    assert.match(
      out,
      new RegExp(
        `^${join(dir, RUN_LOCK_FILE)}: took over the stale lock of pid ${run.child.pid} \\(started [^)]+\\), which no longer runs$`,
        'm',
      ),
    )
    assert.match(
      out,
      /^the evaluation of step-2 was interrupted when the run stopped: evaluating it again \(eval\/\.step-000002-checkpoint\)$/m,
    )
    assert.match(out, new RegExp(`stopping \\(${last} steps done\\)`))
    assert.equal(JSON.parse(readFileSync(join(dir, 'eval', 'step-000002.json'), 'utf8')).step, 2)
    // The end of the run evaluated the SFT checkpoint (step 0) and the last one (the final table).
    const evals = readdirSync(join(dir, 'eval')).sort()
    assert.equal(evals.length, 3, evals.join(', '))
    assert.match(evals[0]!, /^final-\d+\.json$/)
    assert.deepEqual(evals.slice(1), ['step-000000.json', 'step-000002.json'], 'no checkpoint copy is left')
    assert.equal(JSON.parse(readFileSync(join(dir, 'eval', evals[0]!), 'utf8')).step, last)
    assert.equal(existsSync(join(dir, RUN_LOCK_FILE)), false)

    // Finished: a further resume names the final evaluation and touches nothing.
    const before = snapshot(dir)
    const again = startTriad(['run', resumeRecipe, '--resume', dir, '--in-process'])
    assert.equal((await again.exited).code, 0, again.stderr())
    assert.match(
      again.stdout.join('\n'),
      new RegExp(
        `^run ${basename(dir)} is finished: step ${last} reached the step budget of ${last} and its final evaluation is .*eval/${evals[0]}; nothing to do`,
      ),
    )
    assert.deepEqual(snapshot(dir), before)
  })
})
