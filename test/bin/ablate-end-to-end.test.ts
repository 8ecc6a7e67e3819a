// bin/ablate end to end, in a file of its own: with the other ablate cases it came near the
// 300 s per-file timeout on a 2-core machine.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { type AblationJson, tinyRecipe } from '../support/ablate-recipe.ts'
import { runTriad } from '../support/triad-process.ts'

describe('bin/ablate - end to end', () => {
  it('ablate - 2 variants x 2 seeds and one that fails; the SFT is shared; a deleted result is run again, alone', async () => {
    const { dir, file } = tinyRecipe()
    const out = join(dir, 'out')
    // rl.eps_high shares the baseline's cold start; sft.datasets makes its own, which fails (no such file).
    const args = [
      'ablate',
      file,
      '--vary',
      'rl.eps_high=0.2',
      '--vary',
      'sft.datasets=[{"path":"/nonexistent/d.jsonl"}]',
      '--seeds',
      '2',
      '--out',
      out,
      '--in-process',
    ]
    const first = await runTriad(args)
    assert.equal(first.code, 1, first.stderr)
    assert.match(
      first.stdout,
      /^ablation of abl: 3 variants \(one field at a time: baseline, rl\.eps_high=0\.2, sft\.datasets=/m,
    )
    assert.match(first.stdout, /^ablation ░+ 0\/6 runs {2}now: baseline seed 3/m)
    const file1 = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(file1.seeds, [3, 4])
    assert.deepEqual(
      file1.variants.map((v) => [v.id, v.sft]),
      [
        ['baseline', 'baseline'],
        ['rl.eps_high=0.2', 'baseline'],
        ['sft.datasets=[{"path":"/nonexistent/d.jsonl"}]', 'v2-sft_datasets-_path_nonexistent_d_jsonl_'],
      ],
    )
    const status = (f: AblationJson) => f.runs.map((r) => `${r.variant}@${r.seed}:${r.status}`)
    assert.deepEqual(status(file1), [
      'baseline@3:done',
      'rl.eps_high=0.2@3:done',
      'sft.datasets=[{"path":"/nonexistent/d.jsonl"}]@3:failed',
      'baseline@4:done',
      'rl.eps_high=0.2@4:done',
      'sft.datasets=[{"path":"/nonexistent/d.jsonl"}]@4:failed',
    ])
    // The failure says why, and the rest went on.
    const failed = file1.runs.find((r) => r.status === 'failed')!
    assert.match(failed.reason!, /^its cold start failed \(exit 2: triad: .*\/nonexistent\/d\.jsonl/)
    assert.match(first.stderr, /^triad: 2 of 6 runs failed/)
    // One cold start per seed for the baseline's group, copied into both of its variants' runs.
    assert.deepEqual(readdirSync(join(out, 'sft')).sort(), [
      'baseline-s3',
      'baseline-s4',
      'v2-sft_datasets-_path_nonexistent_d_jsonl_-s3',
      'v2-sft_datasets-_path_nonexistent_d_jsonl_-s4',
    ])
    for (const run of ['baseline-s3', 'v1-rl_eps_high-0_2-s4']) {
      const learner = readFileSync(join(out, 'runs', run, 'logs', 'learner.log'), 'utf8')
      assert.match(learner, /starting from the SFT checkpoint/)
      assert.doesNotMatch(learner, /cold-start SFT on expert trajectories/)
      assert.ok(existsSync(join(out, 'runs', run, 'eval', 'step-000000.json')))
    }
    // The table: per task and the mean, each with its seeds; the variant paired with the baseline.
    const mean = file1.rows.find((r) => r.variant === 'rl.eps_high=0.2' && r.task === 'mean')!
    assert.deepEqual(
      [mean.seeds, mean.n, mean.paired_seeds, mean.avg_at_k === null, mean.diff === null],
      [2, 2, 2, false, false],
    )
    assert.deepEqual(
      file1.rows.filter((r) => r.variant === 'baseline').map((r) => r.task),
      ['calc', 'maze', 'mean'],
    )
    const html = readFileSync(join(out, 'ablation.html'), 'utf8')
    assert.match(html, /uPlot/)
    assert.match(html, /<td>rl\.eps_high=0\.2<\/td><td>mean<\/td>/)
    assert.match(html, /Runs without a result/)
    // Each done run records the code it was made with (this checkout's commit), and the page says it.
    const code = file1.runs.filter((r) => r.status === 'done')
    assert.deepEqual(
      code.map((r) => /^([0-9a-f]{40}(\+dirty)?|triad@.+)$/.test(r.code ?? '')),
      [true, true, true, true],
    )
    assert.match(html, new RegExp(`code: 4 runs with ${code[0]!.code!.replace('+', '\\+')}`))
    // ... and the machine and its wall times (the RL phase within the whole run); the page says them.
    for (const r of code) {
      assert.match(r.machine ?? '', /^\d+ x .+, \d+ GiB, Node v\d+/)
      assert.ok(
        r.minutes! > 0 && typeof r.rlMinutes === 'number' && r.rlMinutes <= r.minutes!,
        JSON.stringify(r),
      )
    }
    assert.match(html, /machine: 4 runs with \d+ x /)
    assert.match(html, /wall time: RL phase [\d.]+ to [\d.]+ min \(median [\d.]+\) over 4 runs · whole run /)
    assert.doesNotMatch(html, /<script src=|<link /, 'the page loads nothing from elsewhere')

    // Resume: one run's result deleted; only that run (and the failed ones) run again.
    const victim = join(out, 'runs', 'v1-rl_eps_high-0_2-s4', 'eval')
    for (const f of readdirSync(victim).filter((f) => f.startsWith('final-'))) rmSync(join(victim, f))
    const second = await runTriad(args)
    assert.equal(second.code, 1, second.stderr)
    const ran = second.stdout.split('\n').filter((l) => l.startsWith('running '))
    assert.deepEqual(
      ran.map((l) => l.replace(/ in .*/, '')),
      ['running rl.eps_high=0.2 seed 4'],
    )
    assert.match(
      second.stdout,
      /rl\.eps_high=0\.2 seed 4: .* holds no result \(interrupted or failed\): running it again from the start/,
    )
    assert.doesNotMatch(second.stdout, /cold start of the baseline/)
    const file2 = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(status(file2), status(file1))

    // A table made before a recipe field existed (here triad.stepReward.temperature, at its default
    // 1 in the recipe) resumes: the stored settings read by today's schema are the recipe's.
    const stored = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'))
    delete stored.recipe.settings.triad.stepReward.temperature
    // Nor did it record the RL phase's wall time: read again from each run's metrics.jsonl.
    for (const r of stored.runs) delete r.rlMinutes
    writeFileSync(join(out, 'ablation.json'), JSON.stringify(stored))
    const third = await runTriad(args)
    assert.equal(third.code, 1, third.stderr)
    assert.deepEqual(
      third.stdout.split('\n').filter((l) => l.startsWith('running ')),
      [],
      'every run with a result is kept',
    )
    const record = (f: AblationJson) => f.runs.map((r) => [r.code, r.machine, r.minutes, r.rlMinutes])
    const afterThird = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(record(afterThird), record(file2))
    // The run folders gone (a committed ablation.json in a fresh checkout): the done runs are kept
    // from the file's per-instance results, nothing is run again, and the table is the same.
    rmSync(join(out, 'runs'), { recursive: true })
    const fifth = await runTriad(args)
    assert.equal(fifth.code, 1, fifth.stderr)
    assert.match(fifth.stdout, /^4 runs kept from .*ablation\.json \(their folders are not here\)$/m)
    assert.doesNotMatch(fifth.stdout, /made with other code/, 'the kept runs keep their code, which is this')
    assert.deepEqual(
      fifth.stdout.split('\n').filter((l) => l.startsWith('running ')),
      [],
    )
    const file3 = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(file3.rows, file2.rows)
    assert.deepEqual(record(file3), record(file2), 'each kept run keeps its record')
    assert.deepEqual(status(file3), status(file1))
    // A smaller --seeds runs seed 3 only, and keeps seed 4's results in the table (from the file).
    // One run recorded as made with other code is kept and said.
    const otherCode = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'))
    otherCode.runs[0].code = 'c0de'
    writeFileSync(join(out, 'ablation.json'), JSON.stringify(otherCode))
    const oneSeed = args.map((a, i) => (args[i - 1] === '--seeds' ? '1' : a))
    const seventh = await runTriad(oneSeed)
    assert.equal(seventh.code, 1, seventh.stderr)
    assert.match(
      seventh.stdout,
      /^runs made with other code than this \(([0-9a-f]{12}(\+dirty)?|triad@.+)\): baseline seed 3 with c0de; their results are kept \(compare across code with care; ablation\.json records each run's full commit\)$/m,
    )
    assert.match(seventh.stdout, /^seed 4 past --seeds 1 holds results: kept in the table, not run$/m)
    assert.deepEqual(
      seventh.stdout.split('\n').filter((l) => l.startsWith('running ')),
      [],
    )
    const file4 = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as AblationJson
    assert.deepEqual(file4.seeds, [3, 4])
    assert.deepEqual(file4.rows, file2.rows)
    assert.deepEqual(status(file4).slice(3), [
      'baseline@4:done',
      'rl.eps_high=0.2@4:done',
      'sft.datasets=[{"path":"/nonexistent/d.jsonl"}]@4:missing',
    ])
    // A stored result that does not read is refused, naming the run; the file is left as it was.
    const broken = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'))
    broken.runs[1].instances[0].successes = -1
    writeFileSync(join(out, 'ablation.json'), JSON.stringify(broken))
    const sixth = await runTriad(args)
    assert.equal(sixth.code, 2)
    assert.match(
      sixth.stderr,
      /ablation\.json: run 2 \(rl\.eps_high=0\.2 seed 3\) does not read \(instances\.0\.successes: .*\); move it away to start the table again, or give another --out/,
    )
    assert.equal(sixth.stdout, '', 'refused before the plan is printed')
    assert.deepEqual(JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')), broken)
    // A done run recorded without its results (a table written before results were stored) whose
    // folder is gone runs again, and a line says why.
    const older = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'))
    older.runs[1].instances[0].successes = 0
    delete older.runs[1].instances
    writeFileSync(join(out, 'ablation.json'), JSON.stringify(older))
    const eighth = await runTriad(args)
    assert.equal(eighth.code, 1, eighth.stderr)
    assert.match(
      eighth.stdout,
      /^rl\.eps_high=0\.2 seed 3: .*ablation\.json records it done without its results \(a table written before results were stored\) and its folder is gone: it runs again$/m,
    )
    assert.deepEqual(
      eighth.stdout
        .split('\n')
        .filter((l) => l.startsWith('running '))
        .map((l) => l.replace(/ in .*/, '')),
      ['running rl.eps_high=0.2 seed 3'],
    )

    // Any other difference is another recipe: refused, and the table is left as it was.
    stored.recipe.settings.rl.lr = 0.5
    writeFileSync(join(out, 'ablation.json'), JSON.stringify(stored))
    const fourth = await runTriad(args)
    assert.equal(fourth.code, 2)
    assert.match(
      fourth.stderr,
      /holds an ablation of another recipe: rl\.lr: 0\.5 in the table, 0\.0001 now;/,
    )
    assert.equal(fourth.stdout, '', 'refused before the plan is printed')
    assert.equal(
      JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')).recipe.settings.rl.lr,
      0.5,
      'the refused resume wrote nothing',
    )
  })
})
