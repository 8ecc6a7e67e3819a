import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createRunDir, getTask } from '../../actors/index.ts'
import { registerEval } from '../../bin/commands/eval.ts'
import { closedPort, fakeEndpoint } from '../support/bad-endpoint.ts'
import { type ServedCheckpoint, serveTinyCheckpoint } from '../support/served-checkpoint.ts'
import { writeTinyCheckpoint } from '../support/tiny-checkpoint.ts'
import { runTriadInProcess } from '../support/triad-in-process.ts'
import { runTriad } from '../support/triad-process.ts'

/**
 * One sample of one instance, at most 4 new tokens, seed 0: a quick eval of a tiny checkpoint, on
 * the suite's backend (the child inherits TRIAD_BACKEND; test/support/test-backend.ts).
 */
const QUICK_EVAL = ['--k', '1', '--instances', '1', '--max-new-tokens', '4', '--seed', '0']

/** A run directory with `recipe` as its recipe.json and a tiny checkpoint at learner step 4. */
async function runWithCheckpoint(recipe: object): Promise<{ path: string; recipeFile: string }> {
  const run = await createRunDir({
    runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
    name: 'rd',
    recipe,
  })
  const step = join(run.checkpointsDir, 'step-4')
  await writeTinyCheckpoint(step)
  writeFileSync(
    join(run.checkpointsDir, 'latest.json'),
    JSON.stringify({ version: 4, usedSeqs: [], dir: step }),
  )
  return { path: run.path, recipeFile: run.recipeFile }
}

/** A run's recipe that evaluates calc only, k 2 on 2 instances, 4 new tokens per turn: quick. */
const CALC_RECIPE = {
  name: 'rd',
  tasks: [{ name: 'calc' }],
  evaluation: { k: 2, instancesPerTask: 2 },
  pipeline: { maxNewTokens: 4 },
}

/** What `triad eval --json` prints: the names of the run's eval files (`EvalResult`). */
type EvalJson = {
  title: string
  k: number
  seed: number
  time: number
  rows: { task: string; difficulty: number; n: number; k: number; avg_at_k: number }[]
  instances: { task: string; difficulty: number; index: number; k: number; successes: number }[]
}

describe('bin/eval - bad input', () => {
  it('eval - a corrupt checkpoint is a clear error naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-badckpt-'))
    writeFileSync(join(dir, 'config.json'), '{not json')
    const r = await runTriad(['eval', dir, '--tasks', 'calc', '--k', '1', '--instances', '1'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, new RegExp(`cannot load checkpoint: ${join(dir, 'config.json')}: not JSON`))
  })

  it('eval - an unknown task lists the valid ones', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'chess'])
    assert.equal(r.code, 2)
    assert.match(r.stderr, /unknown task 'chess'; valid tasks: calc, code, maze, sql/)
  })

  it('eval - k below 1 is refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc', '--k', '0'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr.split('\n')[0],
      "error: option '--k <n>' argument '0' is invalid. Expected an integer >= 1.",
    )
  })

  it('eval - --name, --step and --title without --run are refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc', '--step', '3'])
    assert.equal(r.code, 2)
    assert.match(r.stderr, /--name, --step and --title describe the file written with --run: give --run too/)
  })

  it('eval - a bad level in --tasks is refused', async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc:x'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, "triad: --tasks calc:x: the level after ':' must be an integer, got 'x'\n")
  })

  it("eval - a level outside the task's levels is refused, naming where it came from", async () => {
    const r = await runTriad(['eval', '/nonexistent', '--tasks', 'calc,maze:9'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, "triad: --tasks maze:9: difficulty 9 is invalid: task 'maze' has levels 1..7\n")
    const d = await runTriad(['eval', '/nonexistent', '--tasks', 'calc', '--difficulty', '8'])
    assert.equal(d.code, 2)
    assert.equal(d.stderr, "triad: --difficulty 8: difficulty 8 is invalid: task 'calc' has levels 1..7\n")
  })

  it('eval - a path that is neither a checkpoint nor a run directory says what to pass', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-notackpt-'))
    const r = await runTriad(['eval', dir, '--tasks', 'calc'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      `triad: ${dir} is neither a checkpoint (no config.json) nor a run directory (no recipe.json): pass a checkpoint such as runs/<run>/checkpoints/step-50, or a run directory to evaluate its latest checkpoint\n`,
    )
  })

  it('eval - --run with the --name of an existing result fails at once with one line; nothing is evaluated or overwritten', async () => {
    const checkpoint = mkdtempSync(join(tmpdir(), 'triad-evalckpt-'))
    await writeTinyCheckpoint(checkpoint)
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
      name: 'ev',
      recipe: {},
    })
    const file = join(run.evalDir, 'step-000002.json')
    writeFileSync(file, '{"rows": []}\n')
    const r = await runTriad([
      'eval',
      checkpoint,
      '--run',
      run.path,
      '--name',
      'step-000002',
      '--tasks',
      'calc',
      ...QUICK_EVAL,
    ])
    assert.equal(r.code, 1)
    // One line and nothing before it: no backend was chosen, no episode played.
    assert.equal(
      r.stderr,
      `triad: --name step-000002: ${file} already exists; triad never overwrites a run's files (pick another --name)\n`,
    )
    assert.equal(r.stdout, '')
    assert.equal(readFileSync(file, 'utf8'), '{"rows": []}\n')
    assert.deepEqual(readdirSync(run.evalDir), ['step-000002.json'])
  })

  it('eval RUN_DIR - a recipe.json that is not a valid recipe is an error when a setting is read from it', async () => {
    const run = await runWithCheckpoint({})
    const r = await runTriad(['eval', run.path, '--tasks', 'calc', '--k', '1', '--instances', '1'])
    assert.equal(r.code, 2, 'a recipe the schema refuses is a usage error, printed on one line')
    assert.equal(
      r.stderr.split('\n').slice(1).join('\n'),
      `triad: invalid recipe ${run.recipeFile}: tasks: is required (array); give --tasks, --k, --instances, --max-new-tokens and --seed to evaluate without it\n`,
    )
    assert.equal(r.stdout, '')
  })

  it('eval RUN_DIR - a recipe.json that is not JSON is an error when a setting is read from it', async () => {
    const run = await runWithCheckpoint(CALC_RECIPE)
    writeFileSync(run.recipeFile, '{not json')
    const r = await runTriad(['eval', run.path, '--tasks', 'calc'])
    assert.equal(r.code, 1)
    assert.equal(
      r.stderr.split('\n').slice(1).join('\n'),
      `triad: cannot read the run's recipe: ${run.recipeFile}: not JSON; give --tasks, --k, --instances, --max-new-tokens and --seed to evaluate without it\n`,
    )
  })

  it("eval RUN_DIR - --difficulty outside a level of the run's tasks is refused, naming the option", async () => {
    const run = await runWithCheckpoint(CALC_RECIPE)
    const r = await runTriad(['eval', run.path, '--difficulty', '9'])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr.split('\n').slice(1).join('\n'),
      "triad: --difficulty 9: difficulty 9 is invalid: task 'calc' has levels 1..7\n",
    )
  })

  it('eval - a run directory without checkpoints says so', async () => {
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
      name: 'empty',
      recipe: {},
    })
    const r = await runTriad(['eval', run.path, '--tasks', 'calc'])
    assert.equal(r.code, 1)
    assert.equal(
      r.stderr,
      `triad: ${run.path} is a run directory without a checkpoint yet (${run.checkpointsDir} holds no step-N/ or sft/ with a config.json)\n`,
    )
  })
})

describe('bin/eval - into a run directory', () => {
  it('eval RUN_DIR - evaluates the latest checkpoint of the run and says which', async () => {
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
      name: 'rd',
      recipe: {},
    })
    const step = join(run.checkpointsDir, 'step-4')
    await writeTinyCheckpoint(step)
    writeFileSync(
      join(run.checkpointsDir, 'latest.json'),
      JSON.stringify({ version: 4, usedSeqs: [], dir: step }),
    )
    const r = await runTriad(['eval', run.path, '--tasks', 'calc', ...QUICK_EVAL, '--json'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(
      r.stderr,
      new RegExp(
        `^${run.path} is a run directory: evaluating its latest checkpoint ${step} \\(learner step 4\\)$`.replaceAll(
          '/',
          '\\/',
        ),
        'm',
      ),
    )
    const out = JSON.parse(r.stdout) as { checkpoint: string; rows: { task: string; n: number }[] }
    assert.equal(out.checkpoint, step)
    assert.deepEqual(
      out.rows.map((row) => [row.task, row.n]),
      [['calc', 1]],
    )
  })

  it("eval RUN_DIR - options not given come from the run's recipe.json, and one line says which", async () => {
    const run = await runWithCheckpoint(CALC_RECIPE)
    const r = await runTriad(['eval', run.path, '--json'])
    assert.equal(r.code, 0, r.stderr)
    assert.ok(
      r.stderr
        .split('\n')
        .includes(
          `using the run's tasks calc:1, k 2, 2 instances per task, at most 4 new tokens per turn, sampling seed 4242 (${run.recipeFile}; an option given on the command line wins)`,
        ),
      r.stderr,
    )
    const out = JSON.parse(r.stdout) as EvalJson
    assert.equal(out.k, 2)
    assert.equal(out.rows[0]!.n, 2)
    // The run's evaluation seed (recipe seed 0 + 4242), and every instance's result, so that this
    // evaluation pairs up with the run's own (the same instances and sampling seeds).
    assert.equal(out.seed, 4242)
    assert.deepEqual(
      out.instances.map((i) => [i.task, i.difficulty, i.index, i.k]),
      [
        ['calc', 1, 0, 2],
        ['calc', 1, 1, 2],
      ],
    )
    assert.equal(out.rows[0]!.avg_at_k, out.instances.reduce((a, i) => a + i.successes / i.k, 0) / 2)
    assert.deepEqual(
      out.rows.map((row) => [row.task, row.difficulty, row.n, row.k]),
      [['calc', 1, 2, 2]],
    )
  })

  it("eval RUN_DIR - options given on the command line win over the run's recipe", async () => {
    const run = await runWithCheckpoint(CALC_RECIPE)
    const r = await runTriad(['eval', run.path, '--tasks', 'maze', '--k', '1', '--json'])
    assert.equal(r.code, 0, r.stderr)
    assert.ok(
      r.stderr
        .split('\n')
        .includes(
          `using the run's 2 instances per task, at most 4 new tokens per turn, sampling seed 4242 (${run.recipeFile}; an option given on the command line wins)`,
        ),
      r.stderr,
    )
    const out = JSON.parse(r.stdout) as EvalJson
    assert.equal(out.k, 1)
    assert.deepEqual(
      out.rows.map((row) => [row.task, row.n, row.k]),
      [['maze', 2, 1]],
    )
  })

  it('eval - --run with --name, --step, --title and per-task levels writes eval/<name>.json', async () => {
    const checkpoint = mkdtempSync(join(tmpdir(), 'triad-evalckpt-'))
    await writeTinyCheckpoint(checkpoint)
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalrun-')),
      name: 'ev',
      recipe: {},
    })
    // --run is the run id, found under --runs-dir
    const r = await runTriad([
      'eval',
      checkpoint,
      '--run',
      run.id,
      '--runs-dir',
      dirname(run.path),
      '--name',
      'step-000007',
      '--step',
      '7',
      '--title',
      'held-out evaluation at step 7',
      '--tasks',
      'calc:2,maze:1',
      ...QUICK_EVAL,
    ])
    assert.equal(r.code, 0, r.stderr)
    const file = JSON.parse(readFileSync(join(run.evalDir, 'step-000007.json'), 'utf8'))
    assert.equal(file.title, 'held-out evaluation at step 7')
    assert.equal(file.step, 7)
    assert.equal(file.k, 1)
    assert.equal(file.checkpoint, checkpoint)
    assert.deepEqual(
      file.rows.map((row: { task: string; difficulty: number; n: number }) => [
        row.task,
        row.difficulty,
        row.n,
      ]),
      [
        ['calc', 2, 1],
        ['maze', 1, 1],
      ],
    )
  })
})

describe('bin/eval - a served model (--policy openai:URL)', () => {
  let served: ServedCheckpoint
  before(async () => {
    served = await serveTinyCheckpoint('mine')
  })
  after(async () => {
    await served?.stop()
  })

  it('eval --policy - scores the model behind triad serve on the held-out split; the same seed gives the same table; --run writes it', async () => {
    const run = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-evalpol-')),
      name: 'p',
      recipe: {},
    })
    const args = [
      'eval',
      '--policy',
      `openai:${served.base}`,
      '--model',
      'mine',
      '--tasks',
      'calc,sql:1',
      '--k',
      '2',
      '--instances',
      '2',
      '--max-new-tokens',
      '8',
      '--json',
    ]
    const r = await runTriad([...args, '--run', run.path, '--name', 'served', '--step', '3'])
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout) as EvalJson & { policy: string; model: string }
    assert.equal(out.policy, `openai:${served.base}`)
    assert.equal(out.model, 'mine')
    assert.deepEqual(
      out.rows.map((x) => [x.task, x.difficulty, x.n, x.k]),
      [
        ['calc', getTask('calc').difficulty.default, 2, 2],
        ['sql', 1, 2, 2],
      ],
    )
    const again = await runTriad(args)
    assert.equal(again.code, 0, again.stderr)
    assert.deepEqual(JSON.parse(again.stdout).rows, out.rows)
    const file = JSON.parse(readFileSync(join(run.evalDir, 'served.json'), 'utf8'))
    assert.equal(file.title, `triad eval openai:${served.base} (model mine)`)
    assert.equal(file.step, 3)
    assert.equal(file.k, 2)
    assert.deepEqual(file.rows, out.rows)
    assert.equal(file.checkpoint, undefined)
    // One vocabulary: --json prints what the file holds, plus what was served.
    const { policy, model, ...same } = out
    assert.deepEqual(same, file)
    assert.deepEqual([policy, model], [`openai:${served.base}`, 'mine'])
  })

  it('eval --policy - an endpoint that does not answer, or answers garbage, fails at the start with one line naming the URL', async () => {
    const base = `http://127.0.0.1:${await closedPort()}/v1`
    const down = await runTriad(['eval', '--policy', `openai:${base}`, '--model', 'm', '--tasks', 'calc'])
    assert.equal(down.code, 1)
    assert.match(
      down.stderr,
      new RegExp(
        `^triad: policy endpoint ${base}/chat/completions \\(model 'm'\\) failed the start check .*ECONNREFUSED.*\\n$`,
      ),
    )
    const e = await fakeEndpoint((_n, res) => res.writeHead(200).end('not json at all'))
    try {
      const bad = await runTriadInProcess(registerEval, [
        'eval',
        '--policy',
        `openai:${e.base}`,
        '--model',
        'm',
        '--tasks',
        'calc',
      ])
      assert.equal(bad.code, 1)
      assert.match(
        bad.stderr,
        /failed the start check .*: HTTP 200 with a reply that is not JSON: not json at all\n$/,
      )
      assert.equal(e.requests(), 1)
    } finally {
      await e.close()
    }
  })

  it('eval --policy - usage errors exit 2: with a checkpoint too, with --backend; --model or --concurrency without --policy', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['/some/ckpt', '--policy', 'openai:http://127.0.0.1:9/v1'],
        /give a checkpoint \(\/some\/ckpt\) or --policy .*, not both/,
      ],
      [
        ['--policy', 'openai:http://127.0.0.1:9/v1', '--backend', 'wasm'],
        /--backend sets the tensor backend of a checkpoint/,
      ],
      [['/some/ckpt', '--model', 'x'], /--model is a setting of --policy openai:URL/],
      [['/some/ckpt', '--concurrency', '2'], /--concurrency is a setting of --policy openai:URL/],
      [[], /give a checkpoint or run directory to evaluate, or --policy openai:URL/],
      [['--policy', 'vllm'], /--policy vllm: use openai:URL/],
    ]
    for (const [args, message] of cases) {
      const r = await runTriadInProcess(registerEval, ['eval', ...args])
      assert.equal(r.code, 2, args.join(' '))
      assert.match(r.stderr, message)
    }
  })
})
