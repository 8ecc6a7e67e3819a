import assert from 'node:assert/strict'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRunDir, type RunDir, runDirPaths } from '../../../actors/index.ts'
import { heldOutSettings, interruptedEvaluations, startPeriodicEvaluation } from '../../../bin/run/index.ts'
import { defineRecipe, resolveTasks } from '../../../recipes/index.ts'
import { writeTinyCheckpoint } from '../../support/tiny-checkpoint.ts'

const recipe = resolveTasks(
  defineRecipe({
    name: 'pe',
    seed: 3,
    tasks: [{ name: 'calc', difficulty: { start: 2 } }],
    pipeline: { maxNewTokens: 4 },
    evaluation: { every: 2, k: 1, instancesPerTask: 1 },
  }),
)

/** Points the run's `latest.json` at `step-<version>`, as the learner loop does. */
function pointLatest(dir: RunDir, version: number): void {
  const tmp = join(dir.checkpointsDir, 'latest.json.tmp')
  writeFileSync(
    tmp,
    JSON.stringify({ version, usedSeqs: [], dir: join(dir.checkpointsDir, `step-${version}`) }),
  )
  renameSync(tmp, join(dir.checkpointsDir, 'latest.json'))
}

/** A log that resolves waits for a line matching a pattern (deadline 60 s). */
function lineLog() {
  const lines: string[] = []
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = []
  return {
    lines,
    log: (line: string) => {
      lines.push(line)
      for (const w of [...waiters])
        if (w.re.test(line)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(line)
        }
    },
    waitFor: (re: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const seen = lines.find((l) => re.test(l))
        if (seen) return resolve(seen)
        const timer = setTimeout(
          () => reject(new Error(`no line ${re} within 60 s:\n${lines.join('\n')}`)),
          60_000,
        )
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(timer)
            resolve(l)
          },
        })
      }),
  }
}

describe('bin/run/periodic-evaluation', () => {
  it('periodic evaluation - a checkpoint at a multiple of every is evaluated in a triad eval process into eval/step-<n>.json, even when pruned meanwhile', async () => {
    const dir = await createRunDir({ runsDir: mkdtempSync(join(tmpdir(), 'triad-pe-')), name: 'pe', recipe })
    const { log, waitFor, lines } = lineLog()
    const schedule = startPeriodicEvaluation(recipe, dir, 10, log)!
    try {
      mkdirSync(join(dir.checkpointsDir, 'step-2'))
      await writeTinyCheckpoint(join(dir.checkpointsDir, 'step-2'))
      pointLatest(dir, 2)
      assert.equal(
        await waitFor(/^evaluating step-2/),
        'evaluating step-2 in the background: 1 held-out instances x k=1 per task (logs/eval.log)',
      )
      // checkpoints.keep deletes it while it is evaluated: the evaluation reads its own copy.
      rmSync(join(dir.checkpointsDir, 'step-2'), { recursive: true })
      assert.match(
        await waitFor(/^ {2}step-2 calc:/),
        /^ {2}step-2 calc: avg@1 \d\.\d{3} ± \d\.\d{3}, pass@1 /,
      )
      const file = JSON.parse(readFileSync(join(dir.evalDir, 'step-000002.json'), 'utf8'))
      assert.equal(file.title, 'held-out evaluation at step 2')
      assert.equal(file.step, 2)
      assert.equal(file.k, 1)
      assert.deepEqual(
        file.rows.map((r: { task: string; difficulty: number; n: number }) => [r.task, r.difficulty, r.n]),
        [['calc', 2, 1]],
      )
      assert.deepEqual(readdirSync(dir.evalDir), ['step-000002.json'], 'the copy is removed')
      assert.ok(existsSync(join(dir.logsDir, 'eval.log')))

      // A checkpoint that cannot be read: the failure is said, and the schedule goes on.
      mkdirSync(join(dir.checkpointsDir, 'step-4'))
      for (const f of ['model.safetensors', 'config.json', 'tokenizer.json'])
        writeFileSync(join(dir.checkpointsDir, 'step-4', f), 'not a checkpoint')
      pointLatest(dir, 4)
      assert.equal(
        await waitFor(/^evaluation of step-4 failed/),
        `evaluation of step-4 failed: triad eval exited (code 1); see ${join(dir.logsDir, 'eval.log')}`,
      )
      assert.equal(schedule.nextStep, 6)
    } finally {
      await schedule.stop({ wait: true })
    }
    assert.deepEqual(
      lines.filter((l) => l.startsWith('evaluating')),
      [
        'evaluating step-2 in the background: 1 held-out instances x k=1 per task (logs/eval.log)',
        'evaluating step-4 in the background: 1 held-out instances x k=1 per task (logs/eval.log)',
      ],
    )
    // logs/eval.log: what the process did at info level (its stderr is not warnings), the failure
    // of step-4 at error level with the process's one line.
    const evalLog = readFileSync(join(dir.logsDir, 'eval.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string; role: string })
    assert.ok(evalLog.every((l) => l.role === 'eval'))
    const written = evalLog.filter((l) => l.msg.startsWith('written to '))
    assert.deepEqual(
      written.map((l) => [l.level, l.msg]),
      [[30, `written to ${join(dir.evalDir, 'step-000002.json')}`]],
    )
    const errors = evalLog.filter((l) => l.level >= 50)
    assert.equal(errors.length, 1, JSON.stringify(evalLog))
    assert.match(errors[0]!.msg, /^triad eval exited with code 1: triad: /)
    assert.deepEqual(
      evalLog.filter((l) => l.level === 40),
      [],
      'no warnings',
    )
  })

  it('periodic evaluation - one interrupted by the stop keeps its checkpoint copy, and the next start (a resume) evaluates that step again first', async () => {
    const dir = await createRunDir({ runsDir: mkdtempSync(join(tmpdir(), 'triad-pe-')), name: 'pe', recipe })
    const first = lineLog()
    const schedule = startPeriodicEvaluation(recipe, dir, 10, first.log)!
    mkdirSync(join(dir.checkpointsDir, 'step-2'))
    await writeTinyCheckpoint(join(dir.checkpointsDir, 'step-2'))
    pointLatest(dir, 2)
    await first.waitFor(/^evaluating step-2/)
    await schedule.stop({ wait: false }) // SIGINT or SIGTERM of the run: the eval process is stopped
    assert.deepEqual(first.lines.slice(-1), [
      "the evaluation of step-2 was interrupted by the run's stop; a resume evaluates it again",
    ])
    assert.deepEqual(readdirSync(dir.evalDir), ['.step-000002-checkpoint'])

    // The resume: the learner has moved on (step-2 is pruned); the copy is evaluated first, at once.
    rmSync(join(dir.checkpointsDir, 'step-2'), { recursive: true })
    pointLatest(dir, 3)
    const second = lineLog()
    const resumed = startPeriodicEvaluation(recipe, dir, 10, second.log)!
    try {
      assert.deepEqual(second.lines.slice(0, 2), [
        'the evaluation of step-2 was interrupted when the run stopped: evaluating it again (eval/.step-000002-checkpoint)',
        'evaluating step-2 in the background: 1 held-out instances x k=1 per task (logs/eval.log)',
      ])
      await second.waitFor(/^ {2}step-2 calc:/)
      assert.equal(JSON.parse(readFileSync(join(dir.evalDir, 'step-000002.json'), 'utf8')).step, 2)
      assert.deepEqual(readdirSync(dir.evalDir), ['step-000002.json'], 'the copy is removed once evaluated')
      assert.equal(resumed.nextStep, 4)
    } finally {
      await resumed.stop({ wait: true })
    }
  })

  it('periodic evaluation - falling behind: a newer checkpoint replaces the waiting one (its copy removed), the stop waits only for the one in flight, and each skip is a line and an evaluation.skipped event in logs/run.jsonl', async () => {
    const dir = await createRunDir({ runsDir: mkdtempSync(join(tmpdir(), 'triad-pe-')), name: 'pe', recipe })
    const { log, waitFor, lines } = lineLog()
    const schedule = startPeriodicEvaluation(recipe, dir, 10, log)!
    for (const v of [2, 4, 6]) {
      mkdirSync(join(dir.checkpointsDir, `step-${v}`))
      await writeTinyCheckpoint(join(dir.checkpointsDir, `step-${v}`))
    }
    pointLatest(dir, 2)
    await waitFor(/^evaluating step-2/)
    pointLatest(dir, 4)
    schedule.check()
    assert.equal(schedule.waitingStep, 4)
    assert.ok(existsSync(join(dir.evalDir, '.step-000004-checkpoint')), 'the waiting one is pinned')
    pointLatest(dir, 6)
    schedule.check()
    assert.equal(schedule.waitingStep, 6)
    assert.equal(existsSync(join(dir.evalDir, '.step-000004-checkpoint')), false, 'its copy is removed')
    await schedule.stop({ wait: true })
    assert.deepEqual(schedule.started, [2])
    assert.deepEqual(
      lines.filter((l) => l.includes('unevaluated')),
      [
        'step-4 stays unevaluated: a newer checkpoint came before its turn (the periodic evaluation takes the newest)',
        'step-6 stays unevaluated: the run ended before its turn (the end-of-run evaluation follows)',
      ],
    )
    assert.deepEqual(readdirSync(dir.evalDir), ['step-000002.json'])
    const events = readFileSync(join(dir.logsDir, 'run.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((e) => e.event === 'evaluation.skipped')
      .map((e) => [e.step, e.reason, typeof e.time])
    assert.deepEqual(events, [
      [4, 'superseded', 'number'],
      [6, 'stopped', 'number'],
    ])
  })

  it('periodic evaluation - leftovers of a killed run: a copy of an evaluated step, of the SFT checkpoint (the end-of-run evaluation redoes it) and an incomplete copy whose checkpoint is gone are removed; an incomplete copy whose checkpoint exists is evaluated from it', () => {
    const dir = runDirPaths(mkdtempSync(join(tmpdir(), 'triad-pe-')))
    mkdirSync(dir.evalDir, { recursive: true })
    const copies = [
      '.step-000000-checkpoint',
      '.step-000002-checkpoint',
      '.step-000004-checkpoint.partial',
      '.step-000006-checkpoint.partial',
    ]
    for (const c of copies) mkdirSync(join(dir.evalDir, c))
    writeFileSync(join(dir.evalDir, 'step-000002.json'), '{"rows":[]}')
    mkdirSync(join(dir.checkpointsDir, 'step-6'), { recursive: true })
    writeFileSync(join(dir.checkpointsDir, 'step-6', 'model.safetensors'), '')
    const lines: string[] = []
    const pending = interruptedEvaluations(dir, (l) => lines.push(l))
    assert.deepEqual(pending, [{ version: 6, usedSeqs: [], dir: join(dir.checkpointsDir, 'step-6') }])
    assert.deepEqual(lines, [
      'removed eval/.step-000000-checkpoint, left by an interrupted end-of-run evaluation of the SFT checkpoint',
      'the evaluation of step-4 was interrupted while its checkpoint was copied, and the checkpoint is gone: step-4 stays unevaluated',
      `the evaluation of step-6 was interrupted when the run stopped: evaluating it again (${join(dir.checkpointsDir, 'step-6')})`,
    ])
    assert.deepEqual(readdirSync(dir.evalDir), ['step-000002.json'])
  })

  it('periodic evaluation - every 0 schedules nothing; the settings are those of the final evaluation', async () => {
    const dir = await createRunDir({ runsDir: mkdtempSync(join(tmpdir(), 'triad-pe-')), name: 'pe0', recipe })
    const off = resolveTasks(
      defineRecipe({ name: 'pe0', tasks: [{ name: 'calc' }], evaluation: { every: 0 } }),
    )
    assert.equal(
      startPeriodicEvaluation(off, dir, 10, () => {}),
      undefined,
    )
    assert.deepEqual(heldOutSettings(recipe), {
      tasks: [{ name: 'calc', difficulty: 2 }],
      k: 1,
      instances: 1,
      maxNewTokens: 4,
      temperature: recipe.pipeline.temperature,
      top_p: 1,
      seed: 3 + 4242,
    })
  })
})
