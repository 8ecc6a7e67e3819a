import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { checkAblationOut, parseVary, planAblation } from '../../../bin/ablation/index.ts'
import type { TaskCatalog } from '../../../recipes/index.ts'

const catalog: TaskCatalog = Object.fromEntries(
  ['calc', 'maze'].map((name) => [name, { name, difficulty: { min: 1, max: 4, default: 1 } }]),
)
const input = {
  name: 'p',
  seed: 5,
  tasks: [{ name: 'calc' }, { name: 'maze', difficulty: { start: 2 } }],
  evaluation: { k: 2, instancesPerTask: 2 },
}
const plan = planAblation(input, [parseVary('rl.eps_high=0.2')], 1, catalog)

/** A done run's results: every held-out instance (calc at level 1, maze at level 2) with `successes`. */
const instances = (successes: number[]) =>
  [
    ['calc', 1, 0],
    ['calc', 1, 1],
    ['maze', 2, 0],
    ['maze', 2, 1],
  ].map(([task, difficulty, index], i) => ({ task, difficulty, index, k: 2, successes: successes[i] }))

/** An `ablation.json` of the plan as `runAblation` writes it, with these runs. */
function table(runs: unknown): Record<string, unknown> {
  const { derived: _d, ...settings } = plan.base
  return {
    command: 'triad ablate p.mjs --vary rl.eps_high=0.2 --seeds 1',
    recipe: { file: 'p.mjs', name: 'p', settings: JSON.parse(JSON.stringify(settings)) },
    variants: plan.variants.map((v) => ({
      id: v.id,
      ...(v.field === undefined ? {} : { field: v.field, value: v.value }),
      sft: v.sftGroup,
    })),
    runs,
  }
}

const baseline = { variant: 'baseline', seed: 5, status: 'done', dir: 'runs/baseline-s5', step: 3 }
const variant = { variant: 'rl.eps_high=0.2', seed: 5, status: 'done', dir: 'runs/v1-s5', step: 3 }

/** `checkAblationOut` on a folder whose `ablation.json` is `content` (JSON text, or a value). */
function check(content: unknown) {
  const out = mkdtempSync(join(tmpdir(), 'triad-stored-runs-'))
  writeFileSync(join(out, 'ablation.json'), typeof content === 'string' ? content : JSON.stringify(content))
  return checkAblationOut(plan, out, catalog)
}

describe('bin/ablation/ablation-runner - the runs ablation.json stores', () => {
  it('stored runs - done runs come back with their results and record (code, machine, wall times), by variant@seed; a done run without results (an older table) is undefined', () => {
    const stored = check(
      table([
        {
          ...baseline,
          code: 'abc',
          machine: '2 x AMD EPYC, 24 GiB, Node v20.20.2',
          minutes: 7.42,
          rlMinutes: 5.1,
          instances: instances([2, 1, 0, 2]),
        },
        { ...variant },
        { variant: 'baseline', seed: 6, status: 'failed', dir: 'runs/baseline-s6', reason: 'exit 1' },
      ]),
    )
    assert.deepEqual([...stored.keys()], ['baseline@5', 'rl.eps_high=0.2@5'])
    assert.deepEqual(stored.get('baseline@5'), {
      seed: 5,
      step: 3,
      record: { code: 'abc', machine: '2 x AMD EPYC, 24 GiB, Node v20.20.2', minutes: 7.42, rlMinutes: 5.1 },
      instances: instances([2, 1, 0, 2]),
    })
    assert.equal(stored.get('rl.eps_high=0.2@5'), undefined)
  })

  it('stored runs - bad input: each kind is one line naming the run, before anything runs', () => {
    const refused = (content: unknown, message: RegExp) =>
      assert.throws(() => check(content), { name: 'AblationInputError', message })
    const ok = (more: Record<string, unknown> = {}) => ({
      ...baseline,
      instances: instances([2, 1, 0, 2]),
      ...more,
    })
    refused('null', /ablation\.json is not an ablation table \(not a JSON object\)/)
    refused('[]', /ablation\.json is not an ablation table \(not a JSON object\)/)
    refused(table(undefined), /ablation\.json: it holds no runs list; move it away/)
    refused(table({}), /ablation\.json: runs is not a list/)
    refused(table([null]), /run 1 \(\? seed \?\) does not read \(the run: /)
    refused(table([ok({ status: 'weird' })]), /run 1 \(baseline seed 5\) does not read \(status: /)
    refused(table([ok({ minutes: -1 })]), /run 1 \(baseline seed 5\) does not read \(minutes: /)
    refused(table([ok({ rlMinutes: '5' })]), /run 1 \(baseline seed 5\) does not read \(rlMinutes: /)
    refused(table([ok({ machine: 2 })]), /run 1 \(baseline seed 5\) does not read \(machine: /)
    refused(
      table([ok({ variant: 'rl.eps_high=0.3' })]),
      /run 1 \(rl\.eps_high=0\.3 seed 5\) names a variant the table does not have/,
    )
    refused(table([ok(), ok()]), /run 2 \(baseline seed 5\) is listed twice/)
    refused(
      table([ok({ instances: instances([2, 3, 0, 2]) })]),
      /run 1 \(baseline seed 5\): calc level 1 #1 has 3 successes of k 2 \(the table's k is 2\)/,
    )
    refused(
      table([ok({ instances: instances([2, 1, 0, 2]).map((x) => ({ ...x, k: 1, successes: 1 })) })]),
      /calc level 1 #0 has 1 successes of k 1 \(the table's k is 2\)/,
    )
    const moved = instances([2, 1, 0, 2])
    moved[0]!.index = 9
    refused(
      table([ok({ instances: moved })]),
      /run 1 \(baseline seed 5\): its results are not the table's held-out instances \(missing calc level 1 #0; not held out: calc level 1 #9\)/,
    )
    const wrongLevel = instances([2, 1, 0, 2])
    wrongLevel[2]!.difficulty = 1
    refused(table([ok({ instances: wrongLevel })]), /missing maze level 2 #0; not held out: maze level 1 #0/)
    refused(
      table([ok({ instances: [...instances([2, 1, 0, 2]), instances([2, 1, 0, 2])[0]] })]),
      /not the table's held-out instances \(calc level 1 #0 twice\)/,
    )
    refused(table([ok({ instances: instances([2, 1, 0, 2]).slice(1) })]), /\(missing calc level 1 #0\)/)
  })
})
