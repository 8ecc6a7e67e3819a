import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  AblationInputError,
  parseVary,
  planAblation,
  touchesSft,
  variantRecipe,
} from '../../../bin/ablation/index.ts'
import { RecipeFieldError, type TaskCatalog } from '../../../recipes/index.ts'

const catalog: TaskCatalog = Object.fromEntries(
  ['calc', 'maze'].map((name) => [name, { name, difficulty: { min: 1, max: 4, default: 1 } }]),
)
const input = { name: 'p', seed: 5, tasks: [{ name: 'calc' }, { name: 'maze' }], pipeline: { staleEvery: 3 } }

describe('bin/ablation/ablation-plan', () => {
  it('ablation-plan - --vary values: JSON when they parse, else text; commas inside brackets and quotes do not split', () => {
    assert.deepEqual(parseVary('rl.eps_high=0.2,0.28'), { field: 'rl.eps_high', values: [0.2, 0.28] })
    assert.deepEqual(parseVary('rl.aggregation=seq-mean-token-mean'), {
      field: 'rl.aggregation',
      values: ['seq-mean-token-mean'],
    })
    assert.deepEqual(parseVary('rl.offPolicy={"name":"tis","level":"sequence"},false'), {
      field: 'rl.offPolicy',
      values: [{ name: 'tis', level: 'sequence' }, false],
    })
    assert.throws(() => parseVary('rl.eps_high'), AblationInputError)
    assert.throws(() => parseVary('rl.eps_high=0.2,'), {
      message: '--vary rl.eps_high=0.2,: an empty value (write FIELD=V1,V2 with no empty item)',
    })
  })

  it('ablation-plan - a --vary value that starts as JSON but is not JSON is refused with the reason, not taken as text', () => {
    for (const [arg, bad] of [
      ['triad={bad json', '{bad json'],
      ['tasks=[1,2', '[1,2'],
      ['rl.aggregation="token-mean', '"token-mean'],
      ['rl.offPolicy={"name":"tis"},{"name":', '{"name":'],
    ] as const) {
      let reason = ''
      try {
        JSON.parse(bad)
      } catch (err) {
        reason = (err as Error).message
      }
      assert.throws(() => parseVary(arg), {
        name: 'AblationInputError',
        message: `--vary ${arg}: ${bad} is not JSON (${reason})`,
      })
    }
    assert.deepEqual(parseVary('rl.aggregation="token-mean"').values, ['token-mean'])
  })

  it('ablation-plan - the baseline, then one field at a time (no grid); seeds from the recipe seed; the SFT shared unless the field touches it', () => {
    const plan = planAblation(
      input,
      [
        parseVary('rl.eps_high=0.2,0.28'),
        parseVary('sft.expertErrorRate=0'),
        parseVary('pipeline.staleEvery=10'),
      ],
      3,
      catalog,
    )
    assert.deepEqual(plan.seeds, [5, 6, 7])
    assert.deepEqual(
      plan.variants.map((v) => [v.id, v.slug, v.sftGroup]),
      [
        ['baseline', 'baseline', 'baseline'],
        ['rl.eps_high=0.2', 'v1-rl_eps_high-0_2', 'baseline'],
        ['sft.expertErrorRate=0', 'v2-sft_expertErrorRate-0', 'v2-sft_expertErrorRate-0'],
        ['pipeline.staleEvery=10', 'v3-pipeline_staleEvery-10', 'baseline'],
      ],
    )
    // 0.28 is the default: the baseline stands for it.
    assert.deepEqual(plan.skipped, [
      "--vary rl.eps_high=0.28 is the recipe's own value: the baseline stands for it",
    ])
    // The variant is the recipe as written with the field changed: defaults that follow are recomputed.
    const stale = variantRecipe(plan, plan.variants[3]!, 6, catalog)
    assert.deepEqual([stale.seed, stale.pipeline.staleEvery, stale.pipeline.stalenessBound], [6, 10, 14])
    assert.equal(variantRecipe(plan, plan.variants[1]!, 5, catalog).rl.eps_high, 0.2)
  })

  it("ablation-plan - an object value is merged into the field's object: two settings that must change together are one variant", () => {
    const withTriad = { ...input, triad: { adaptiveTasks: false, stepReward: { lambda: 0.3 } } }
    const plan = planAblation(
      withTriad,
      [
        parseVary(
          'triad={"stepReward":{"enabled":false},"trainRewardModel":false},{"rewardModelSft":{"steps":5}}',
        ),
      ],
      1,
      catalog,
    )
    const off = variantRecipe(plan, plan.variants[1]!, 5, catalog)
    assert.deepEqual(
      [
        off.triad.stepReward.enabled,
        off.triad.trainRewardModel,
        off.triad.stepReward.lambda,
        off.triad.adaptiveTasks,
      ],
      [false, false, 0.3, false],
    )
    // Its leaves decide whether it touches the cold start: triad.rewardModelSft.steps does.
    assert.deepEqual(
      plan.variants.map((v) => v.sftGroup),
      ['baseline', 'baseline', 'v2-triad-_rewardModelSft_steps_5_'],
    )
  })

  it('ablation-plan - fields that touch the cold start, from their path', () => {
    for (const f of [
      'seed',
      'tasks[0].weight',
      'model.width',
      'sft.expertErrorRate',
      'triad.rewardModelSft.steps',
    ])
      assert.equal(touchesSft(f), true, f)
    for (const f of ['rl.eps_high', 'pipeline.rho', 'triad.stepReward.enabled', 'sftx', 'budget.maxMinutes'])
      assert.equal(touchesSft(f), false, f)
  })

  it('ablation-plan - bad input: an unknown field, a refused value, seed, name, the held-out instances, a field twice, no seed', () => {
    assert.throws(() => planAblation(input, [parseVary('rl.eps_hgh=1')], 1, catalog), RecipeFieldError)
    assert.throws(() => planAblation(input, [parseVary('rl.eps_high=-1')], 1, catalog), {
      name: 'AblationInputError',
      message: '--vary rl.eps_high=-1: rl.eps_high: must be > 0',
    })
    assert.throws(() => planAblation(input, [parseVary('seed=1')], 1, catalog), /--vary seed: the seeds/)
    assert.throws(
      () => planAblation(input, [parseVary('name=foo')], 1, catalog),
      /--vary name: the run name is a label/,
    )
    assert.throws(
      () => planAblation(input, [parseVary('evaluation.instancesPerTask=4')], 1, catalog),
      /--vary evaluation\.instancesPerTask=4: it changes the held-out instances/,
    )
    assert.throws(
      () => planAblation(input, [parseVary('rl.c=2'), parseVary('rl.c=3')], 1, catalog),
      /--vary rl\.c is given twice/,
    )
    assert.throws(() => planAblation(input, [], 0, catalog), {
      message: '--seeds 0: needs at least one seed',
    })
    // A value given twice, once parsed (0.2 and 0.20): two variants of one id would share a run.
    assert.throws(() => planAblation(input, [parseVary('rl.eps_high=0.2,0.20')], 1, catalog), {
      message: '--vary rl.eps_high: the value 0.2 is given twice (list each value once)',
    })
    // Every value the recipe's own: nothing to compare.
    assert.throws(() => planAblation(input, [parseVary('rl.eps_high=0.28')], 1, catalog), {
      message:
        "every --vary value is the recipe's own (rl.eps_high=0.28): nothing to compare with the baseline",
    })
    // A number JSON reads as Infinity.
    assert.throws(() => parseVary('rl.eps_high=0.2,1e400'), {
      message: '--vary rl.eps_high=0.2,1e400: 1e400 is not a finite number',
    })
  })

  it('ablation-plan - a field inside a list element (tasks[0].weight) is varied in that element', () => {
    const plan = planAblation(input, [parseVary('tasks[1].weight=3')], 1, catalog)
    assert.deepEqual(
      plan.variants.map((v) => v.id),
      ['baseline', 'tasks[1].weight=3'],
    )
    const r = variantRecipe(plan, plan.variants[1]!, 5, catalog)
    assert.deepEqual(
      r.tasks.map((t) => [t.name, t.weight]),
      [
        ['calc', 1],
        ['maze', 3],
      ],
    )
    assert.throws(() => planAblation(input, [parseVary('tasks[2].weight=3')], 1, catalog), {
      name: 'RecipeFieldError',
      message: /tasks has 2 elements/,
    })
  })
})
