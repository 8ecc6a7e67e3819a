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
import { type AblationJson, ablateOne, tinyRecipe } from '../support/ablate-recipe.ts'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'
import { runTriad, startTriad } from '../support/triad-process.ts'

describe('bin/ablate - bad input', () => {
  it('ablate - a field the recipe does not have is named with the nearest ones and the fields beside it; nothing is run', async () => {
    const { dir, file } = tinyRecipe()
    const out = join(dir, 'out')
    const r = await runTriad(['ablate', file, '--vary', 'rl.eps_hgh=0.2', '--seeds', '1', '--out', out])
    assert.equal(r.code, 2)
    assert.equal(
      r.stderr,
      'triad: --vary rl.eps_hgh is not a recipe field; nearest: rl.eps_high, rl.eps_low, sft.epochs; the fields of rl: groupSize, advantage, eps_low, eps_high, c, aggregation, overlong, kl, entropyCoef, lr, weightDecay, gradClip, taskAdvantageNorm, dynamicSampling, offPolicy\n',
    )
    assert.equal(existsSync(out), false)
  })

  it('ablate - a value the schema refuses is one line naming the option and the field; nothing is run', async () => {
    const { dir, file } = tinyRecipe()
    const out = join(dir, 'out')
    const r = await runTriad(['ablate', file, '--vary', 'rl.eps_high=0.2,-1', '--seeds', '1', '--out', out])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, 'triad: --vary rl.eps_high=-1: rl.eps_high: must be > 0\n')
    assert.equal(existsSync(out), false)
    const seed = await runTriad(['ablate', file, '--vary', 'seed=1,2', '--seeds', '1', '--out', out])
    assert.equal(seed.code, 2)
    assert.equal(
      seed.stderr,
      "triad: --vary seed: the seeds of an ablation are --seeds N (the recipe's seed, +1, ...)\n",
    )
    const instances = await runTriad([
      'ablate',
      file,
      '--vary',
      'evaluation.k=2',
      '--seeds',
      '1',
      '--out',
      out,
    ])
    assert.equal(instances.code, 2)
    assert.match(instances.stderr, /^triad: --vary evaluation\.k=2: it changes the held-out instances/)
    assert.equal(existsSync(out), false)
  })
})

describe('bin/ablate - an --out that cannot hold the table', () => {
  it('ablate - a file as --out or above it, and an ablation.json that does not read, are one line each (exit 2); nothing is run or changed', async () => {
    const { dir, file } = tinyRecipe()
    const asFile = join(dir, 'a-file')
    writeFileSync(asFile, 'x')
    const r = await ablateOne(file, asFile)
    assert.equal(r.code, 2)
    assert.equal(r.stderr, `triad: --out ${asFile} is a file, not a folder\n`)
    const under = await ablateOne(file, join(asFile, 'sub', 'out'))
    assert.equal(under.code, 2)
    assert.equal(
      under.stderr,
      `triad: --out ${join(asFile, 'sub', 'out')} cannot be made: ${asFile} is a file, not a folder\n`,
    )
    assert.equal(readFileSync(asFile, 'utf8'), 'x')
    const out = join(dir, 'out')
    mkdirSync(out)
    writeFileSync(join(out, 'ablation.json'), '{')
    const damaged = await ablateOne(file, out)
    assert.equal(damaged.code, 2)
    assert.match(
      damaged.stderr,
      /^triad: .*ablation\.json does not read \(.*\); move it away to start the table again, or give another --out\n$/,
    )
    assert.equal(readFileSync(join(out, 'ablation.json'), 'utf8'), '{')
    assert.deepEqual(readdirSync(out), ['ablation.json'])
  })
})

describe('bin/ablate - an interrupted table', () => {
  it('ablate - Ctrl-C during a run: it stops (exit 130) with the run recorded missing; the same command runs only that one, and the done run keeps its record', async () => {
    const { dir, file } = tinyRecipe()
    const out = join(dir, 'out')
    const args = ['ablate', file, '--vary', 'rl.eps_high=0.2', '--seeds', '1', '--out', out]
    // In a process group of its own, signalled whole, as a terminal's Ctrl-C does.
    const first = startTriad(args, {}, { ownGroup: true })
    await first.waitForText(/^running rl\.eps_high=0\.2 seed 3 in /, 240_000)
    process.kill(-first.child.pid!, 'SIGINT')
    assert.equal((await first.exited).code, 130, first.stderr())
    const said = first.stdout.join('\n')
    assert.match(
      said,
      /^rl\.eps_high=0\.2 seed 3 interrupted \(SIGINT\): the next triad ablate runs it again$/m,
    )
    assert.match(said, /^stopped by SIGINT: 1 of 2 runs done; the same command goes on with the 1 left$/m)
    const stopped = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(
      stopped.runs.map((r) => `${r.variant}:${r.status}`),
      ['baseline:done', 'rl.eps_high=0.2:missing'],
    )
    const second = await runTriad(args)
    assert.equal(second.code, 0, second.stderr)
    assert.deepEqual(
      second.stdout
        .split('\n')
        .filter((l) => /^(running|cold start) /.test(l))
        .map((l) => l.replace(/ in .*/, '')),
      ['running rl.eps_high=0.2 seed 3'],
      'only the interrupted run, from the same cold start',
    )
    const resumed = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(
      resumed.runs.map((r) => `${r.variant}:${r.status}`),
      ['baseline:done', 'rl.eps_high=0.2:done'],
    )
    assert.deepEqual(resumed.runs[0], stopped.runs[0], 'the done run is kept as it was')
    // The documented continue step on the complete table (its ablation.json alone in the folder,
    // as in a fresh checkout): nothing runs, the file stays byte for byte as it was (its `updated`
    // too), and no empty folder of runs, cold starts, recipes or logs is made.
    // Written on another machine (the committed table continued here): its machine is kept too.
    const done = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'))
    done.machine = { ...done.machine, cpu: 'another cpu' }
    const table = Buffer.from(JSON.stringify(done))
    renameSync(out, join(dir, 'old-out'))
    mkdirSync(out)
    writeFileSync(join(out, 'ablation.json'), table)
    const third = await runTriad(args)
    assert.equal(third.code, 0, third.stderr)
    assert.match(third.stdout, /^2 runs kept from .*ablation\.json \(their folders are not here\)$/m)
    assert.deepEqual(
      third.stdout.split('\n').filter((l) => /^(running|cold start) /.test(l)),
      [],
    )
    assert.ok(readFileSync(join(out, 'ablation.json')).equals(table), 'ablation.json is unchanged')
    assert.deepEqual(readdirSync(out).sort(), ['ablation.html', 'ablation.json'])
  })
})

describe('bin/ablate - a pretrained policy', () => {
  it("ablate - a recipe with model.hf: the cold start (the SFT's adapters, no run tokenizer) is made once and shared", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-ablate-hf-'))
    const model = join(dir, 'tiny-qwen3')
    await writeTinyQwen3(model, { contextLength: 1024 })
    // recipes/tiny-hf.ts validates its model directory when imported: point it at this one first.
    process.env.TRIAD_TINY_HF_DIR = model
    const { tinyHfInput } = await import('../../recipes/tiny-hf.ts')
    const file = join(dir, 'abl-hf.mjs')
    const recipe = {
      ...tinyHfInput,
      name: 'abl-hf',
      model: { ...tinyHfInput.model, hf: model },
      // Outcome rewards only: the reward model's cold start is shared as for triad's own model.
      triad: { adaptiveTasks: false, stepReward: { enabled: false }, trainRewardModel: false },
      budget: { maxSteps: 1, maxMinutes: 5 },
    }
    writeFileSync(file, `export default ${JSON.stringify(recipe)}\n`)
    const out = join(dir, 'out')
    const r = await ablateOne(file, out, '--in-process')
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`)
    const table = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(
      table.runs.map((run) => `${run.variant}@${run.seed}:${run.status}`),
      ['baseline@0:done', 'rl.eps_high=0.2@0:done'],
    )
    assert.deepEqual(readdirSync(join(out, 'sft')), ['baseline-s0'])
    for (const run of ['baseline-s0', 'v1-rl_eps_high-0_2-s0']) {
      const learner = readFileSync(join(out, 'runs', run, 'logs', 'learner.log'), 'utf8')
      assert.match(learner, /starting from the SFT checkpoint/)
      assert.doesNotMatch(learner, /cold-start SFT on expert trajectories/)
      assert.ok(existsSync(join(out, 'runs', run, 'checkpoints', 'sft', 'adapter_model.safetensors')))
      assert.equal(existsSync(join(out, 'runs', run, 'tokenizer.json')), false)
    }
    rmSync(dir, { recursive: true, force: true })
  })
})
